// Entries in path order (wire::Offer::ordered, protocol 10): the receiver's
// check with the last path alone, and the sender's walk that makes the order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/files/path_order.hpp"
#include "engine/files/source_tree.hpp"

namespace braid::files {
namespace {

namespace fs = std::filesystem;
using wire::EntryKind;

/// The first refusal of `paths` in this order (empty: all taken).
std::string first_refusal(const std::vector<std::pair<std::string, EntryKind>>& paths) {
  PathOrder order;
  for (const auto& [p, kind] : paths)
    if (std::string why = order.follow(p, kind); !why.empty()) return p + ": " + why;
  return {};
}

constexpr auto D = EntryKind::directory, F = EntryKind::file, L = EntryKind::symlink;

TEST(PathOrder, ATreeInItsWalksOrderIsTaken) {
  // Component by component, not as strings: "a/c" before "a-b" although '-' < '/'.
  EXPECT_EQ(first_refusal({{"a", D}, {"a/c", F}, {"a/d", D}, {"a/d/e", F}, {"a/z", L}, {"a-b", F}, {"b", D},
                           {"b/x/y", F}}),  // b/x is never sent: made as its parent, as before
            "");
  EXPECT_EQ(first_refusal({{"A", F}, {"B", F}, {"a", F}, {"\xc3\xa9", F}}), "");  // by bytes, unsigned
}

TEST(PathOrder, WhatTheWholeIndexRefusedIsRefusedWithTheLastPathAlone) {
  auto refused = [](std::vector<std::pair<std::string, EntryKind>> paths, const std::string& why) {
    const std::string got = first_refusal(paths);
    EXPECT_NE(got.find(why), std::string::npos) << "got: '" << got << "'";
    return got.substr(0, got.find(':'));
  };
  EXPECT_EQ(refused({{"a", D}, {"a/b", F}, {"a/b", F}}, "names 'a/b' twice"), "a/b");
  EXPECT_EQ(refused({{"a", D}, {"a", D}}, "twice"), "a");
  EXPECT_EQ(refused({{"a", D}, {"a/c", F}, {"a/b", F}}, "not in path order"), "a/b");
  EXPECT_EQ(refused({{"b", F}, {"a", F}}, "not in path order"), "a");
  EXPECT_EQ(refused({{"a/b", F}, {"a", D}}, "comes after an entry beneath it"), "a");
  EXPECT_EQ(refused({{"a", F}, {"a/b", F}}, "beneath 'a', which it does not send as a directory"), "a/b");
  EXPECT_EQ(refused({{"a", D}, {"a/l", L}, {"a/l/x/y", F}}, "beneath 'a/l', which"), "a/l/x/y");
  // A name out of order deep down, after the entries of a later directory.
  EXPECT_EQ(refused({{"t", D}, {"t/d1", D}, {"t/d1/f", F}, {"t/d2", D}, {"t/d1/g", F}}, "not in path order"), "t/d1/g");
}

TEST(PathOrder, TheStreamedWalkIsInPathOrderWhateverOrderItsOperandsCameIn) {
  const fs::path s = fs::temp_directory_path() / ("braid-order-" + std::to_string(::getpid()));
  fs::remove_all(s);
  for (const char* d : {"t/a", "t/a-b", "t/a/c", "t/B", "u"}) fs::create_directories(s / d);
  for (const char* f : {"t/a/c/f", "t/a/e", "t/a-b/x", "t/a.b", "t/B/y", "u/z", "v"}) std::ofstream(s / f) << f;
  fs::create_symlink("a/e", s / "t/link");
  ScanOptions opts;
  ASSERT_TRUE(walks_in_path_order(opts));
  opts.hard_links = true;  // links name other entries: no longer what Offer::ordered says
  EXPECT_FALSE(walks_in_path_order(opts));
  opts.hard_links = false;
  PathOrder order;
  size_t entries = 0;
  std::string refused;
  const std::vector<std::string> operands{(s / "v").string(), (s / "u").string(), (s / "t").string()};
  const ScanResult walk = scan_sources_streamed(operands, opts, 3, [&](SourceTree&& b, bool) {
    for (const auto& e : b.entries) {
      ++entries;
      if (std::string why = order.follow(e.path, e.kind); !why.empty() && refused.empty()) refused = e.path + ": " + why;
    }
    return true;
  });
  ASSERT_TRUE(walk.ok()) << walk.error;
  EXPECT_EQ(refused, "");
  EXPECT_EQ(entries, 14u);  // t and 10 beneath it, u and u/z, v
  // The whole walk goes by the same order, so a transfer key is one whatever way the tree was walked.
  const ScanResult whole = scan_sources(operands, opts);
  ASSERT_TRUE(whole.ok());
  PathOrder again;
  for (const auto& e : whole.tree.entries) EXPECT_EQ(again.follow(e.path, e.kind), "") << e.path;
  fs::remove_all(s);
}

}  // namespace
}  // namespace braid::files
