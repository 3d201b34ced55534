// The receiver's set of manifest paths by entry index (engine/files/path_index.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/files/path_index.hpp"

namespace braid::files {
namespace {

struct Paths {
  std::vector<std::string> at;
  std::string_view operator()(uint32_t i) const { return at[i]; }
  uint32_t add(std::string p) {
    at.push_back(std::move(p));
    return static_cast<uint32_t>(at.size() - 1);
  }
};

TEST(PathIndex, FindsWhatWasInsertedAndNothingElse) {
  Paths paths;
  PathIndex index;
  EXPECT_FALSE(index.find("a", paths));  // empty: no table yet
  for (std::string p : {"a", "a/b", "a/b/c", "d"}) EXPECT_TRUE(index.insert(paths.add(p), p, paths));
  EXPECT_EQ(index.size(), 4u);
  EXPECT_EQ(index.find("a", paths), 0u);
  EXPECT_EQ(index.find("a/b", paths), 1u);
  EXPECT_EQ(index.find("a/b/c", paths), 2u);
  EXPECT_EQ(index.find("d", paths), 3u);
  EXPECT_FALSE(index.find("a/", paths));
  EXPECT_FALSE(index.find("b", paths));
  EXPECT_FALSE(index.find("", paths));
}

TEST(PathIndex, ASecondEntryWithTheSamePathIsNotAdded) {
  Paths paths;
  PathIndex index;
  EXPECT_TRUE(index.insert(paths.add("x/y"), "x/y", paths));
  EXPECT_FALSE(index.insert(paths.add("x/y"), "x/y", paths));
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(index.find("x/y", paths), 0u);  // the first one stays
}

TEST(PathIndex, GrowsAndKeepsEveryEntryFindable) {
  Paths paths;
  PathIndex index;
  size_t grew = 0, capacity = index.capacity();
  for (int i = 0; i < 1000; ++i) {
    const std::string p = "d/" + std::to_string(i);
    ASSERT_TRUE(index.insert(paths.add(p), p, paths));
    if (index.capacity() != capacity) ++grew, capacity = index.capacity();
    // At most three quarters full: a probe for a missing path ends soon.
    EXPECT_LE(index.size() * 4, index.capacity() * 3);
  }
  EXPECT_GE(grew, 5u);
  for (uint32_t i = 0; i < 1000; ++i) EXPECT_EQ(index.find(paths.at[i], paths), i);
}

TEST(PathIndex, ManyEntriesCostAFewBytesEach) {
  Paths paths;
  PathIndex index;
  constexpr uint32_t kEntries = 200'000;
  index.reserve(kEntries, paths);
  const size_t reserved = index.capacity();
  for (uint32_t i = 0; i < kEntries; ++i) {
    const std::string p = "dir" + std::to_string(i / 1000) + "/file" + std::to_string(i);
    ASSERT_TRUE(index.insert(paths.add(p), p, paths));
  }
  EXPECT_EQ(index.capacity(), reserved);  // reserve made room for them all
  EXPECT_LE(index.capacity() * sizeof(uint32_t), 12u * kEntries);  // an unordered_set of views: 60 and more
  for (uint32_t i = 0; i < kEntries; i += 997) EXPECT_EQ(index.find(paths.at[i], paths), i);
  EXPECT_FALSE(index.find("dir0/file200000", paths));
  EXPECT_FALSE(index.insert(paths.add("dir7/file7123"), "dir7/file7123", paths));
}

}  // namespace
}  // namespace braid::files
