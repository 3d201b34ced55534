// The core is pure: no sockets, threads, clocks or asio. Time comes in as an
// argument (STYLE.md). This test reads every core source file and fails on
// anything that would let the core touch the outside world.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

TEST(CorePurity, NoIoThreadsOrClocksInTheCore) {
  const std::vector<std::string> forbidden = {
      "<sys/socket.h>", "<netinet/", "<arpa/inet.h>", "<thread>", "<mutex>", "<condition_variable>",
      "<asio", "<boost/asio", "<unistd.h>", "<fcntl.h>", "<sys/epoll.h>", "<fstream>", "<iostream>",
      "steady_clock", "system_clock", "high_resolution_clock", "gettimeofday", "clock_gettime", "std::rand",
      "random_device"};
  const std::filesystem::path core = std::filesystem::path(BRAID_SOURCE_DIR) / "src" / "core";
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(core)) {
    const auto ext = entry.path().extension();
    if (ext != ".hpp" && ext != ".cpp" && ext != ".h" && ext != ".cc") continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& word : forbidden)
      EXPECT_EQ(text.str().find(word), std::string::npos) << entry.path() << " uses " << word;
  }
  EXPECT_GT(files, 10);
}

}  // namespace
