// A live lane under attack: forged, corrupted, replayed and stale datagrams
// injected into a running transfer are refused and counted, and the
// transfer still arrives identical.
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "loopback_pair.hpp"

namespace braid::udp::test {
namespace {

constexpr size_t kMiB = 1 << 20;

// Keeps copies of chosen sealed datagrams as they leave the sender.
struct Capture {
  std::mutex mu;
  std::vector<std::vector<uint8_t>> kept;
  uint64_t seen = 0;
  void operator()(std::span<const uint8_t> d) {
    std::lock_guard lock(mu);
    if (++seen % 100 == 50 && kept.size() < 8) kept.emplace_back(d.begin(), d.end());
  }
  std::vector<std::vector<uint8_t>> wait_for(size_t n) {
    for (int i = 0; i < 5000; ++i) {
      {
        std::lock_guard lock(mu);
        if (kept.size() >= n) return kept;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return {};
  }
};

TEST(LaneSecurity, ForgedReplayedAndStaleDatagramsAreRefusedAndCounted) {
  LoopbackPair pair(32 * kMiB, kMiB);
  auto capture = std::make_shared<Capture>();
  UdpLaneConfig s = base_config("127.0.0.1:0");
  // Pace the lane so the injected packets land mid-transfer.
  s.rate_limit = Rate::mbit(400);
  s.fault.on_sent = [capture](std::span<const uint8_t> d) { (*capture)(d); };
  ASSERT_TRUE(pair.start(s, base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  const auto kept = capture->wait_for(4);
  ASSERT_EQ(kept.size(), 4u);

  // Forgeries carry packet numbers far ahead: had they moved the replay
  // window, every genuine packet after them would be "too old" and the
  // transfer would never finish.
  auto corrupted = kept[0];
  corrupted[6] ^= 0x01;                     // packet number + 2^48: fresh, so the tag is checked
  corrupted[corrupted.size() / 2] ^= 0x20;  // and a flipped bit in the ciphertext
  EXPECT_EQ(pair.sender().send_raw_datagram(corrupted), 0);
  auto bad_tag = kept[1];
  bad_tag[7] ^= 0x01;  // packet number + 2^40
  bad_tag.back() ^= 0x01;
  EXPECT_EQ(pair.sender().send_raw_datagram(bad_tag), 0);
  // A bit flipped in a packet the receiver already has is caught earlier,
  // by the window, before any crypto.
  auto stale_corrupt = kept[2];
  stale_corrupt[stale_corrupt.size() / 2] ^= 0x20;
  EXPECT_EQ(pair.sender().send_raw_datagram(stale_corrupt), 0);
  EXPECT_EQ(pair.sender().send_raw_datagram(kept[2]), 0);  // replay, within the window
  auto other_lane = kept[3];
  other_lane[4] ^= 0x01;  // lane id in the clear header
  EXPECT_EQ(pair.sender().send_raw_datagram(other_lane), 0);
  std::vector<uint8_t> runt = {0x40, 0, 0};
  EXPECT_EQ(pair.sender().send_raw_datagram(runt), 0);

  ASSERT_TRUE(pair.wait_acked(pair.piece_count())) << "acked " << pair.acked().size();
  const auto c = pair.stop();
  EXPECT_TRUE(pair.identical());
  EXPECT_EQ(c.recv.rejected_forged, 2u);
  EXPECT_EQ(c.recv.rejected_replayed + c.recv.rejected_too_old, 2u);
  EXPECT_EQ(c.recv.rejected_other, 2u);  // foreign lane + bad header
  EXPECT_EQ(c.recv.protocol_errors, 0u);
  EXPECT_EQ(c.send.rejected_total(), 0u);
}

TEST(LaneSecurity, OldDatagramReplayedLateIsTooOld) {
  LoopbackPair pair(16 * kMiB, kMiB);
  auto capture = std::make_shared<Capture>();
  UdpLaneConfig s = base_config("127.0.0.1:0");
  s.fault.on_sent = [capture](std::span<const uint8_t> d) { (*capture)(d); };
  ASSERT_TRUE(pair.start(s, base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  const auto kept = capture->wait_for(1);
  ASSERT_FALSE(kept.empty());
  ASSERT_TRUE(pair.wait_acked(pair.piece_count()));
  // ~11000 packets later: far behind the 1024-packet replay window.
  EXPECT_EQ(pair.sender().send_raw_datagram(kept[0]), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto c = pair.stop();
  EXPECT_TRUE(pair.identical());
  EXPECT_EQ(c.recv.rejected_too_old, 1u);
  EXPECT_EQ(c.recv.rejected_replayed, 0u);
}

TEST(LaneSecurity, WrongKeysNeverDeliverAByte) {
  // A sender with another lane secret: every datagram is refused as forged,
  // nothing reaches on_data, and the receiver does not adopt it as its peer.
  LoopbackPair pair(2 * kMiB, kMiB);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  s.lane_secret = test_secret(9);
  s.idle_timeout = Duration::millis(300);
  ASSERT_TRUE(pair.start(s, base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_sender_closed(std::chrono::seconds(10)));
  const auto reasons = pair.closed_reasons();
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("no answer over UDP in 0.3 s"), std::string::npos) << reasons[0];
  const auto c = pair.stop();
  EXPECT_GT(c.recv.rejected_forged, 0u);
  EXPECT_EQ(c.recv.packets_received, 0u);
  EXPECT_TRUE(pair.acked().empty());
}

}  // namespace
}  // namespace braid::udp::test
