// recv --links safe: which link targets stay inside the received tree.
#include <gtest/gtest.h>

#include "engine/files/link_policy.hpp"

namespace braid::files {
namespace {

std::string why(const std::string& at, const std::string& target, const std::set<std::string>& links = {}) {
  auto p = security::RelativePath::parse(at);
  EXPECT_TRUE(p) << at;
  return unsafe_link_reason(p.value(), target, links);
}

TEST(LinkPolicy, NamesParse) {
  EXPECT_EQ(parse_link_policy("keep"), LinkPolicy::keep);
  EXPECT_EQ(parse_link_policy("safe"), LinkPolicy::safe);
  EXPECT_EQ(parse_link_policy("skip"), LinkPolicy::skip);
  EXPECT_FALSE(parse_link_policy("all"));
}

TEST(LinkPolicy, TargetsInsideTheTreeAreSafe) {
  EXPECT_EQ(why("t/l", "f"), "");
  EXPECT_EQ(why("t/l", "./f"), "");
  EXPECT_EQ(why("t/a/b/l", "../../f"), "");  // t/f
  EXPECT_EQ(why("t/a/l", "../../x"), "");    // the target's own root: still inside
  EXPECT_EQ(why("t/l", ".."), "");
  EXPECT_EQ(why("t/l", "a//b/./c"), "");
  EXPECT_EQ(why("t/l", "a/../../t/f"), "");  // down and back up, never out
}

TEST(LinkPolicy, AbsoluteEscapingAndEmptyTargetsAreNot) {
  EXPECT_EQ(why("t/l", "/etc/passwd"), "its target is absolute");
  EXPECT_EQ(why("t/l", "//x"), "its target is absolute");
  EXPECT_EQ(why("l", ".."), "its target leaves the received tree");
  EXPECT_EQ(why("t/l", "../.."), "its target leaves the received tree");
  EXPECT_EQ(why("t/a/b/l", "../../../../etc"), "its target leaves the received tree");
  EXPECT_EQ(why("t/l", "a/../../../x"), "its target leaves the received tree");  // out, even if it came back in
  EXPECT_EQ(why("t/l", "../../t/f"), "its target leaves the received tree");
  EXPECT_EQ(why("t/l", ""), "its target is empty");
}

TEST(LinkPolicy, ATargetThroughAnotherLinkIsNot) {
  // t/up -> .. is safe by itself; "up/../.." through it would climb out.
  const std::set<std::string> links = {"t/up"};
  EXPECT_EQ(why("t/up", "..", links), "");
  EXPECT_EQ(why("t/x", "up/../..", links), "its target passes through the link 't/up'");
  EXPECT_EQ(why("t/x", "up/f", links), "its target passes through the link 't/up'");
  EXPECT_EQ(why("t/x", "up", links), "");  // a link to the link: that one is checked on its own
  EXPECT_EQ(why("t/x", "up/.", links), "");
}

}  // namespace
}  // namespace braid::files
