// The transport core must stay pure: no sockets, threads, clocks or asio.
// Scans every source file in src/core/transport for forbidden includes/calls.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

TEST(Purity, TransportCoreHasNoIoThreadsOrClocks) {
  const std::filesystem::path root = BRAID_TRANSPORT_SRC_DIR;
  ASSERT_TRUE(std::filesystem::exists(root)) << root;
  const char* forbidden[] = {"<sys/socket.h>", "<netinet/", "<arpa/inet.h>", "<unistd.h>", "<thread>",
                             "<mutex>", "<future>", "<chrono>", "asio", "steady_clock", "system_clock",
                             "high_resolution_clock", "clock_gettime", "gettimeofday", "throw ",
                             "<iostream>", "std::rand", "<random>"};
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const auto ext = entry.path().extension();
    if (ext != ".hpp" && ext != ".cpp") continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    for (const char* word : forbidden) {
      EXPECT_EQ(text.find(word), std::string::npos) << entry.path() << " contains " << word;
    }
  }
  EXPECT_GT(files, 10);
}

}  // namespace
