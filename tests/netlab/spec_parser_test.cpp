// The text syntax of links and events: units, directions, errors.
#include "model/spec_parser.hpp"

#include <gtest/gtest.h>

namespace netlab {
namespace {

using namespace std::chrono_literals;

TEST(SpecParser, DurationsNeedUnits) {
  EXPECT_EQ(*parse_duration("3ms").value, 3ms);
  EXPECT_EQ(*parse_duration("1.5s").value, 1500ms);
  EXPECT_EQ(*parse_duration("250us").value, 250us);
  EXPECT_EQ(*parse_duration("0").value, 0ns);
  EXPECT_FALSE(parse_duration("3"));
  EXPECT_NE(parse_duration("3").error.find("needs a unit"), std::string::npos);
  EXPECT_FALSE(parse_duration("3min"));
  EXPECT_FALSE(parse_duration("fast"));
}

// Found by fuzz/targets/netlab_spec.cpp: a number past 2^63 went through
// std::llround, whose result there is unspecified (a negative delay).
TEST(SpecParser, NumbersTooLargeForTheModelAreRefused) {
  EXPECT_FALSE(parse_duration("555555555555555555555555555.5s"));
  EXPECT_NE(parse_duration("9300000000s").error.find("too long"), std::string::npos);
  EXPECT_EQ(*parse_duration("9000000000s").value, std::chrono::seconds(9'000'000'000));
  EXPECT_FALSE(parse_rate("99999999999999999999Gbit"));
  EXPECT_FALSE(parse_size("99999999999999999999GB"));
  EXPECT_FALSE(parse_queue("99999999999999999999p"));
  EXPECT_FALSE(parse_link("W:delay=99999999999999999999s"));
  // Both times fit, their sum does not (found by review of the fuzz target).
  EXPECT_FALSE(parse_event("at=9000000000s,link=W,outage=9000000000s"));
  EXPECT_TRUE(parse_event("at=4000000000s,link=W,outage=4000000000s"));
}

TEST(SpecParser, RatesAreInBits) {
  EXPECT_EQ(parse_rate("160Mbit").value->bps(), 160'000'000u);
  EXPECT_EQ(parse_rate("1.5mbit").value->bps(), 1'500'000u);
  EXPECT_EQ(parse_rate("1Gbit").value->bps(), 1'000'000'000u);
  EXPECT_EQ(parse_rate("64kbit").value->bps(), 64'000u);
  EXPECT_TRUE(parse_rate("unlimited").value->is_unlimited());
  // tc reads "Mbps" as megabytes per second; refusing it avoids an 8x surprise.
  EXPECT_FALSE(parse_rate("160Mbps"));
  EXPECT_FALSE(parse_rate("160"));
}

TEST(SpecParser, LossAsFractionOrPercent) {
  EXPECT_DOUBLE_EQ(*parse_probability("0.01").value, 0.01);
  EXPECT_DOUBLE_EQ(*parse_probability("1%").value, 0.01);
  EXPECT_FALSE(parse_probability("150%"));
  EXPECT_FALSE(parse_probability("1.5"));
}

TEST(SpecParser, QueueInPacketsBytesOrTime) {
  EXPECT_EQ(*parse_queue("1000p").value, QueueLimit::packets(1000));
  EXPECT_EQ(*parse_queue("2MB").value, QueueLimit::bytes(2'000'000));
  EXPECT_EQ(*parse_queue("64KiB").value, QueueLimit::bytes(65536));
  EXPECT_EQ(*parse_queue("50ms").value, QueueLimit::duration(50ms));
  EXPECT_FALSE(parse_queue("1000"));  // packets or bytes? say which
}

TEST(SpecParser, LinkSetsBothDirectionsUnlessPrefixed) {
  const auto link = parse_link("W:rate=320Mbit,delay=3ms,loss=0.01,queue=2MB,jitter=1ms,down.rate=20Mbit,up.codel");
  ASSERT_TRUE(link) << link.error;
  const LinkSpec& s = *link.value;
  EXPECT_EQ(s.name, "W");
  EXPECT_EQ(s.up.rate.bps(), 320'000'000u);
  EXPECT_EQ(s.down.rate.bps(), 20'000'000u);
  EXPECT_EQ(s.up.delay, 3ms);
  EXPECT_EQ(s.down.delay, 3ms);
  EXPECT_EQ(s.down.jitter, 1ms);
  EXPECT_DOUBLE_EQ(s.down.loss, 0.01);
  EXPECT_EQ(s.up.queue, QueueLimit::bytes(2'000'000));
  EXPECT_TRUE(s.up.codel.enabled);
  EXPECT_FALSE(s.down.codel.enabled);
  EXPECT_EQ(s.up.codel.target, 5ms);  // RFC 8289 defaults
  EXPECT_EQ(s.up.codel.interval, 100ms);
}

TEST(SpecParser, LinkLevelKeys) {
  const auto link = parse_link("B:rate=1.5Mbit,mtu=9000,gso=off,seed=7");
  ASSERT_TRUE(link) << link.error;
  EXPECT_EQ(link.value->mtu, 9000u);
  EXPECT_FALSE(link.value->gso);
  EXPECT_EQ(link.value->seed, 7u);
}

TEST(SpecParser, BareNameIsAnUnlimitedLink) {
  const auto link = parse_link("fast");
  ASSERT_TRUE(link) << link.error;
  EXPECT_TRUE(link.value->up.rate.is_unlimited());
  EXPECT_EQ(link.value->up.delay, 0ns);
}

TEST(SpecParser, LinkErrorsSayWhatIsWrong) {
  EXPECT_NE(parse_link("U:rate=fast").error.find("rate"), std::string::npos);
  EXPECT_NE(parse_link("U:colour=red").error.find("unknown key 'colour'"), std::string::npos);
  EXPECT_FALSE(parse_link("a name with spaces:rate=1Mbit"));
  EXPECT_FALSE(parse_link("waytoolongname:rate=1Mbit"));  // nl-NAME must fit an interface name
  EXPECT_FALSE(parse_link("U:outage"));  // outages are events, not settings
}

TEST(SpecParser, TimedOutageBecomesTwoEvents) {
  const auto events = parse_event("at=2s,link=U,outage=3s");
  ASSERT_TRUE(events) << events.error;
  ASSERT_EQ(events.value->size(), 2u);
  const LinkEvent& off = (*events.value)[0];
  const LinkEvent& on = (*events.value)[1];
  EXPECT_EQ(off.at, 2s);
  EXPECT_EQ(off.link, "U");
  EXPECT_EQ(off.up.dark, true);
  EXPECT_EQ(off.down.dark, true);
  EXPECT_EQ(on.at, 5s);
  EXPECT_EQ(on.up.dark, false);
  EXPECT_EQ(on.down.dark, false);
}

TEST(SpecParser, OutageSpellings) {
  for (const char* text : {"at=1s,link=U,down,for=2s", "at=1s,link=U,outage,for=2s", "at=1s,link=U,down=2s"}) {
    const auto events = parse_event(text);
    ASSERT_TRUE(events) << text << ": " << events.error;
    EXPECT_EQ(events.value->size(), 2u) << text;
    EXPECT_EQ(events.value->back().at, 3s) << text;
  }
  const auto up = parse_event("link=U,up");
  ASSERT_TRUE(up) << up.error;
  EXPECT_EQ(up.value->at(0).up.dark, false);
  EXPECT_EQ(up.value->at(0).at, 0s);  // no "at": now
}

TEST(SpecParser, EventChangesSettingsPerDirection) {
  const auto events = parse_event("at=4s,link=*,up.rate=16Mbit,loss=2%");
  ASSERT_TRUE(events) << events.error;
  const LinkEvent& e = events.value->at(0);
  EXPECT_EQ(e.link, "*");
  EXPECT_EQ(e.up.rate->bps(), 16'000'000u);
  EXPECT_FALSE(e.down.rate);
  EXPECT_DOUBLE_EQ(*e.down.loss, 0.02);
}

TEST(SpecParser, EventErrors) {
  EXPECT_FALSE(parse_event("at=2s,outage"));           // which link?
  EXPECT_FALSE(parse_event("at=2s,link=U"));           // does what?
  EXPECT_FALSE(parse_event("at=2,link=U,outage"));     // 2 what?
  EXPECT_FALSE(parse_event("link=U,rate=1Mbit,for=1s"));  // for= without outage
}

}  // namespace
}  // namespace netlab
