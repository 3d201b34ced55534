// The link model must stay pure: standard library only, time as a parameter.
// That is what lets every other model test run in virtual time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

TEST(ModelPurity, NoClocksSocketsThreadsOrSystemHeaders) {
  const std::filesystem::path model_dir = NETLAB_MODEL_DIR;
  const char* forbidden[] = {"#include <sys/", "#include <unistd.h>", "#include <linux/", "#include <thread>",
                             "#include <mutex>", "#include <random>", "steady_clock", "system_clock",
                             "high_resolution_clock", "clock_gettime", "::now()"};
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(model_dir)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    ++files;
    for (const char* word : forbidden)
      EXPECT_EQ(text.str().find(word), std::string::npos) << entry.path() << " uses " << word;
  }
  EXPECT_GE(files, 8);
}

}  // namespace
