// Names a thread so that `top -H`, perf and /proc/PID/task/*/comm say which
// lane's work it is (bench/loopback/lanes_cpu reads them per thread).
#pragma once

#include <pthread.h>

#include <string>

namespace braid::transfer {

/// Linux keeps the first 15 bytes.
inline void name_this_thread(const std::string& name) { ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str()); }

}  // namespace braid::transfer
