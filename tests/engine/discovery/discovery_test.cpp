// What `braid send` makes of its last operand, the code's public number, and
// what an announcement's TXT holds (engine/discovery/discovery.hpp). The
// protocol itself is tested pure (tests/core/discovery); the sockets between
// network namespaces (tests/integration/discovery.sh).
#include <gtest/gtest.h>

#include "engine/discovery/discovery.hpp"

namespace braid::discovery {
namespace {

TEST(Rendezvous, IsTheFirstGroupWhenItIsFourDigits) {
  EXPECT_EQ(rendezvous_of("4711-apple-river-stone-cloud"), "4711");
  EXPECT_EQ(rendezvous_of("0042 apple river stone cloud"), "0042");
  EXPECT_FALSE(rendezvous_of("4711").has_value());   // the number alone holds no secret: not a code
  EXPECT_FALSE(rendezvous_of("4711-").has_value());  // nor with nothing after the separator
  EXPECT_FALSE(rendezvous_of("471-apple").has_value());
  EXPECT_FALSE(rendezvous_of("47111-apple").has_value());
  EXPECT_FALSE(rendezvous_of("PXJT-QXMJ-6R2X-E517-STZR-ZEZG").has_value());
  EXPECT_FALSE(rendezvous_of("").has_value());
  EXPECT_FALSE(rendezvous_of("a711-apple").has_value());
}

TEST(ClassifyTarget, AddressesCodesAndLabels) {
  const auto pinned = [](std::string_view n) { return n == "laptop" || n == "4711-x"; };
  EXPECT_EQ(classify_target("192.168.1.20", pinned), TargetKind::address);
  EXPECT_EQ(classify_target("192.168.1.20:7878", pinned), TargetKind::address);
  EXPECT_EQ(classify_target("[fe80::1%eth0]:7878", pinned), TargetKind::address);
  EXPECT_EQ(classify_target("::1", pinned), TargetKind::address);
  EXPECT_EQ(classify_target("host.example:9000", pinned), TargetKind::address);
  EXPECT_EQ(classify_target("4711-apple-river-stone-cloud", pinned), TargetKind::code);
  EXPECT_EQ(classify_target("4711-x", pinned), TargetKind::code);  // the code shape wins over a label
  EXPECT_EQ(classify_target("laptop", pinned), TargetKind::label);
  EXPECT_EQ(classify_target("some-host", pinned), TargetKind::address);  // a host name, as before
  EXPECT_EQ(classify_target("localhost", nullptr), TargetKind::address);
}

TEST(Announcement, TxtHoldsVersionNumberAndFingerprintOnly) {
  const auto txt = announcement_txt(std::string("4711"), "SHA256:abc");
  EXPECT_EQ(txt, (std::vector<std::string>{"v=1", "n=4711", "fp=SHA256:abc"}));
  // Built from the code's number, never from the code: its words cannot reach the TXT.
  const std::string code = "4711-apple-river-stone-cloud";
  for (const auto& s : announcement_txt(rendezvous_of(code), "SHA256:abc"))
    for (const char* w : {"apple", "river", "stone", "cloud"}) EXPECT_EQ(s.find(w), std::string::npos) << s;
  EXPECT_EQ(announcement_txt(std::nullopt, "SHA256:abc"), (std::vector<std::string>{"v=1", "fp=SHA256:abc"}));
}

}  // namespace
}  // namespace braid::discovery
