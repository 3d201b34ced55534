// PathMemory: a known peer's path figures, kept for the next session's fast
// start — recent ones only, bounded, and a damaged file is no hint at all.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/transfer/path_memory.hpp"

namespace braid::transfer {
namespace {

const transport::StartHint kFigures{Rate::mbit(480), Duration::micros(40'500)};

TEST(PathMemory, WhatWasRememberedComesBackForThatPeerAndPathOnly) {
  PathMemory m;
  const auto key = PathMemory::udp_path_key("eth0", "192.0.2.7");
  m.remember("SHA256:peer", key, kFigures, 1000);
  const auto again = PathMemory::parse(m.to_text());
  const auto h = again.hint("SHA256:peer", key, 1000 + 60);
  ASSERT_TRUE(h.has_value());
  EXPECT_NEAR(h->rate.bits_per_second(), 480e6, 1);
  EXPECT_EQ(h->rtt, Duration::micros(40'500));
  EXPECT_FALSE(again.hint("SHA256:other", key, 1060).has_value());
  EXPECT_FALSE(again.hint("SHA256:peer", PathMemory::udp_path_key("wlan0", "192.0.2.7"), 1060).has_value());
}

TEST(PathMemory, OldFiguresAreNoHint) {
  PathMemory m;
  m.remember("p", "k", kFigures, 1000);
  EXPECT_TRUE(m.hint("p", "k", 1000 + PathMemory::kMaxAgeSeconds).has_value());
  EXPECT_FALSE(m.hint("p", "k", 1000 + PathMemory::kMaxAgeSeconds + 1).has_value());
  EXPECT_FALSE(m.hint("p", "k", 999).has_value());  // from the future: a clock that jumped
}

TEST(PathMemory, ItHoldsABoundedNumberOfPathsAndPeersDroppingTheOldest) {
  PathMemory m;
  for (size_t i = 0; i < PathMemory::kMaxPathsPerPeer + 5; ++i)
    m.remember("p", "path" + std::to_string(i), kFigures, static_cast<int64_t>(1000 + i));
  EXPECT_FALSE(m.hint("p", "path0", 2000).has_value());
  EXPECT_TRUE(m.hint("p", "path" + std::to_string(PathMemory::kMaxPathsPerPeer + 4), 2000).has_value());
  for (size_t i = 0; i < PathMemory::kMaxPeers + 3; ++i)
    m.remember("peer" + std::to_string(i), "k", kFigures, static_cast<int64_t>(3000 + i));
  EXPECT_FALSE(m.hint("p", "path20", 4000).has_value());  // the least recently used peer went first
  EXPECT_FALSE(m.hint("peer0", "k", 4000).has_value());
  EXPECT_TRUE(m.hint("peer" + std::to_string(PathMemory::kMaxPeers + 2), "k", 4000).has_value());
}

TEST(PathMemory, ADamagedOrForeignFileIsNoHint) {
  for (const char* text : {"", "{", "[]", R"({"version":2,"peers":{}})", R"({"version":"1","peers":{}})",
                           R"({"version":1,"peers":{"p":{"k":{"rate_bytes_per_sec":-5,"rtt_us":100,"at":1000}}}})",
                           R"({"version":1,"peers":{"p":{"k":{"rate_bytes_per_sec":"fast","rtt_us":100,"at":1000}}}})"}) {
    const auto m = PathMemory::parse(text);
    EXPECT_FALSE(m.hint("p", "k", 1000).has_value()) << text;
  }
}

TEST(PathMemory, SavedPrivatelyAndLoadedBack) {
  const auto dir = std::filesystem::temp_directory_path() / ("braid-path-memory-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  PathMemory m;
  m.remember("p", "k", kFigures, 1000);
  ASSERT_EQ(m.save(dir), "");
  const auto perms = std::filesystem::status(dir / "path-figures.json").permissions();
  EXPECT_EQ(perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all), std::filesystem::perms::none);
  EXPECT_TRUE(PathMemory::load(dir).hint("p", "k", 1000).has_value());
  EXPECT_FALSE(PathMemory::load(dir / "missing").hint("p", "k", 1000).has_value());
  std::filesystem::remove_all(dir);
}

// The protocol each peer spoke, for an offer in TLS's last flight
// (SenderSession::connect): kept with no age limit, written again only
// when it changed or once a day, and a damaged entry is no knowledge.
TEST(PathMemory, APeersProtocolIsRememberedAndSavedOnlyWhenItIsNews) {
  PathMemory m;
  EXPECT_FALSE(m.protocol("p").has_value());
  EXPECT_TRUE(m.remember_protocol("p", {8, true}, 1000));
  EXPECT_FALSE(m.remember_protocol("p", {8, true}, 1000 + 60));
  EXPECT_TRUE(m.remember_protocol("p", {7, false}, 1000 + 120));
  EXPECT_TRUE(m.remember_protocol("p", {7, false}, 1000 + 120 + PathMemory::kMaxAgeSeconds));
  const auto again = PathMemory::parse(m.to_text());
  ASSERT_TRUE(again.protocol("p").has_value());
  EXPECT_EQ(*again.protocol("p"), (wire::PeerProtocol{7, false}));
  EXPECT_FALSE(again.protocol("other").has_value());
  // Path figures and protocols live side by side.
  m.remember("p", "k", kFigures, 1000);
  EXPECT_TRUE(PathMemory::parse(m.to_text()).hint("p", "k", 1000).has_value());
  EXPECT_TRUE(PathMemory::parse(m.to_text()).protocol("p").has_value());
  // An earlier binary's file (no protocols) still gives its figures.
  const auto old = PathMemory::parse(R"({"version":1,"peers":{"p":{"k":{"rate_bytes_per_sec":1e6,"rtt_us":100,"at":1000}}}})");
  EXPECT_TRUE(old.hint("p", "k", 1000).has_value());
  EXPECT_FALSE(old.protocol("p").has_value());
  // A receiver newer than this binary comes back as it said.
  PathMemory newer;
  newer.remember_protocol("p", {wire::kProtocolVersion + 1, true}, 1000);
  ASSERT_TRUE(PathMemory::parse(newer.to_text()).protocol("p").has_value());
  EXPECT_EQ(PathMemory::parse(newer.to_text()).protocol("p")->version, wire::kProtocolVersion + 1);
  for (const char* bad : {R"({"version":1,"peers":{},"protocols":{"p":{"version":0,"said":true,"at":1}}})",
                          R"({"version":1,"peers":{},"protocols":{"p":{"version":999999,"said":true,"at":1}}})",
                          R"({"version":1,"peers":{},"protocols":{"p":{"version":-8,"said":true,"at":1}}})",
                          R"({"version":1,"peers":{},"protocols":{"p":{"version":8,"said":"yes","at":1}}})",
                          R"({"version":1,"peers":{},"protocols":{"p":{"version":8,"said":true}}})",
                          R"({"version":1,"peers":{},"protocols":{"p":8}})", R"({"version":1,"peers":{},"protocols":[]})"})
    EXPECT_FALSE(PathMemory::parse(bad).protocol("p").has_value()) << bad;
}

TEST(PathMemory, ItRemembersTheProtocolsOfABoundedNumberOfPeersDroppingTheLeastRecentlyMet) {
  PathMemory m;
  for (size_t i = 0; i < PathMemory::kMaxPeers + 2; ++i)
    m.remember_protocol("peer" + std::to_string(i), {9, true}, static_cast<int64_t>(1000 + i));
  EXPECT_FALSE(m.protocol("peer0").has_value());
  EXPECT_FALSE(m.protocol("peer1").has_value());
  EXPECT_TRUE(m.protocol("peer2").has_value());
  EXPECT_TRUE(m.protocol("peer" + std::to_string(PathMemory::kMaxPeers + 1)).has_value());
}

}  // namespace
}  // namespace braid::transfer
