#include "engine/security/frame_crypto.h"

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <chrono>
#include <optional>
#include <set>
#include <cstdio>
#include <vector>

namespace braid::security {
namespace {

constexpr std::uint64_t kSession = 0x1122334455667788;
constexpr std::uint32_t kLane = 3;
constexpr Direction kDir = Direction::client_to_server;

LaneKeys keys_for(std::uint64_t session, const LaneSecret& secret) {
  auto k = derive_lane_keys(secret, session, kLane);
  EXPECT_TRUE(k);
  return k.value();
}

LaneSecret random_secret() {
  LaneSecret s;
  RAND_bytes(s.data(), static_cast<int>(s.size()));
  return s;
}

std::vector<std::uint8_t> random_bytes(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  if (n) RAND_bytes(v.data(), static_cast<int>(n));
  return v;
}

struct Lane {
  explicit Lane(Ordering ordering = Ordering::strict, std::uint64_t session = kSession, std::uint32_t lane = kLane,
                SealLimits limits = {})
      : secret(random_secret()) {
    auto k = derive_lane_keys(secret, session, lane);
    EXPECT_TRUE(k);
    auto s = FrameSealer::create(k.value().for_direction(kDir), session, lane, kDir, limits);
    auto o = FrameOpener::create(k.value().for_direction(kDir), session, lane, kDir, ordering);
    EXPECT_TRUE(s && o);
    sealer.emplace(std::move(s.value()));
    opener.emplace(std::move(o.value()));
  }

  std::vector<std::uint8_t> seal(std::span<const std::uint8_t> payload, std::uint8_t type = 7) {
    std::vector<std::uint8_t> frame(sealed_frame_size(static_cast<std::uint32_t>(payload.size())));
    EXPECT_EQ(sealer->seal(type, payload, frame), FrameStatus::ok);
    return frame;
  }

  FrameStatus open(std::span<const std::uint8_t> frame, std::vector<std::uint8_t>* plain = nullptr) {
    std::vector<std::uint8_t> out(frame.size());
    OpenedFrame f;
    FrameStatus s = opener->open(frame, out, f);
    if (s == FrameStatus::ok && plain) *plain = std::vector<std::uint8_t>(out.begin(), out.begin() + f.length);
    return s;
  }

  LaneSecret secret;
  std::optional<FrameSealer> sealer;
  std::optional<FrameOpener> opener;
};

TEST(FrameCrypto, SealOpenRoundTrip) {
  Lane lane;
  for (std::size_t size : {0u, 1u, 15u, 16u, 17u, 1000u, 65536u}) {
    auto payload = random_bytes(size);
    auto frame = lane.seal(payload, 9);
    ASSERT_EQ(frame.size(), payload.size() + kFrameOverhead);
    std::vector<std::uint8_t> out(payload.size() + 1);
    OpenedFrame f;
    ASSERT_EQ(lane.opener->open(frame, out, f), FrameStatus::ok) << size;
    EXPECT_EQ(f.type, 9);
    EXPECT_EQ(f.length, size);
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), out.begin()));
  }
  EXPECT_EQ(lane.sealer->next_counter(), 7u);
  EXPECT_EQ(lane.opener->count(FrameStatus::ok), 7u);
}

TEST(FrameCrypto, CiphertextHidesThePayload) {
  Lane lane;
  std::vector<std::uint8_t> zeros(4096, 0);
  auto frame = lane.seal(zeros);
  int zero_bytes = 0;
  for (std::size_t i = kFrameHeaderSize; i < kFrameHeaderSize + zeros.size(); ++i) zero_bytes += frame[i] == 0;
  EXPECT_LT(zero_bytes, 64);  // ~16 expected by chance
}

TEST(FrameCrypto, SealAndOpenInPlace) {
  Lane lane;
  auto payload = random_bytes(65536);
  std::vector<std::uint8_t> buf(sealed_frame_size(65536));
  std::copy(payload.begin(), payload.end(), buf.begin() + kFrameHeaderSize);
  ASSERT_EQ(lane.sealer->seal(1, std::span(buf).subspan(kFrameHeaderSize, 65536), buf), FrameStatus::ok);
  OpenedFrame f;
  ASSERT_EQ(lane.opener->open(buf, std::span(buf).subspan(kFrameHeaderSize), f), FrameStatus::ok);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), buf.begin() + kFrameHeaderSize));
}

// The receiver opens piece frames split: the small piece header in place,
// the bytes straight into the piece buffer. The plaintext must be the same,
// split anywhere (also off the AES block size), and the tag still checked.
TEST(FrameCrypto, OpenSplitGivesTheSamePlaintextAnywhere) {
  Lane lane;
  auto payload = random_bytes(4096 + 7);
  for (std::size_t head_len : {0u, 1u, 15u, 16u, 72u, 4096u, 4103u}) {
    auto frame = lane.seal(payload);
    std::vector<std::uint8_t> head(head_len), tail(payload.size() - head_len + 5, 0xEE);
    OpenedFrame f;
    ASSERT_EQ(lane.opener->open_split(frame, head, tail, f), FrameStatus::ok) << head_len;
    EXPECT_EQ(f.length, payload.size());
    EXPECT_TRUE(std::equal(head.begin(), head.end(), payload.begin())) << head_len;
    EXPECT_TRUE(std::equal(payload.begin() + head_len, payload.end(), tail.begin())) << head_len;
    EXPECT_EQ(tail.back(), 0xEE);  // nothing past the frame's bytes is touched
  }
  // In place for the head, elsewhere for the tail (what LaneLink does).
  auto frame = lane.seal(payload);
  std::vector<std::uint8_t> tail(payload.size() - 72);
  OpenedFrame f;
  ASSERT_EQ(lane.opener->open_split(frame, std::span(frame).subspan(kFrameHeaderSize, 72), tail, f), FrameStatus::ok);
  EXPECT_TRUE(std::equal(payload.begin(), payload.begin() + 72, frame.begin() + kFrameHeaderSize));
  EXPECT_TRUE(std::equal(payload.begin() + 72, payload.end(), tail.begin()));
}

TEST(FrameCrypto, OpenSplitRejectsForgeriesAndShortBuffers) {
  Lane lane;
  auto payload = random_bytes(1000);
  auto frame = lane.seal(payload);
  std::vector<std::uint8_t> head(72), tail(1000 - 72);
  OpenedFrame f;
  auto bad = frame;
  bad[kFrameHeaderSize + 500] ^= 1;  // inside the tail's ciphertext
  EXPECT_EQ(lane.opener->open_split(bad, head, tail, f), FrameStatus::forged);
  std::vector<std::uint8_t> short_tail(1000 - 73);
  EXPECT_EQ(lane.opener->open_split(frame, head, short_tail, f), FrameStatus::buffer_too_small);
  std::vector<std::uint8_t> long_head(1001);  // more head than the frame has
  EXPECT_EQ(lane.opener->open_split(frame, long_head, tail, f), FrameStatus::buffer_too_small);
  EXPECT_EQ(lane.opener->open_split(frame, head, tail, f), FrameStatus::ok);  // the real one still opens
}

TEST(FrameCrypto, HeaderCarriesSessionLaneDirectionCounterAndLength) {
  Lane lane;
  lane.seal(random_bytes(3));
  auto frame = lane.seal(random_bytes(100), 42);
  FrameHeader h;
  ASSERT_EQ(decode_frame_header(std::span(frame).first<kFrameHeaderSize>(), h), FrameStatus::ok);
  EXPECT_EQ(h.type, 42);
  EXPECT_EQ(h.length, 100u);
  EXPECT_EQ(h.session_id, kSession);
  EXPECT_EQ(h.lane_id, kLane);
  EXPECT_EQ(h.direction, kDir);
  EXPECT_EQ(h.counter, 1u);
}

TEST(FrameCrypto, EveryFlippedBitIsDetected) {
  Lane lane;
  auto payload = random_bytes(64);
  auto frame = lane.seal(payload);
  for (std::size_t bit = 0; bit < frame.size() * 8; ++bit) {
    auto bad = frame;
    bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    FrameStatus s = lane.open(bad);
    ASSERT_NE(s, FrameStatus::ok) << "bit " << bit;
    // A flip in the body, the tag or the authenticated-only header bytes is
    // "forged"; a flip in a routing field reads as another session/lane/etc.
    if (bit / 8 >= kFrameHeaderSize) {
      EXPECT_EQ(s, FrameStatus::forged) << "bit " << bit;
    }
  }
  // Nothing of that moved the opener: the genuine frame still opens.
  std::vector<std::uint8_t> plain;
  ASSERT_EQ(lane.open(frame, &plain), FrameStatus::ok);
  EXPECT_EQ(plain, payload);
  // Header: version, direction, reserved, length -> bad_header; session id ->
  // foreign_session; lane id -> foreign_lane; counter -> out_of_order; type -> forged.
  EXPECT_EQ(lane.opener->count(FrameStatus::forged), 8u + (64 + 16) * 8);
  EXPECT_EQ(lane.opener->count(FrameStatus::bad_header), 8u + 8 + 8 + 32 + 32);
  EXPECT_EQ(lane.opener->count(FrameStatus::foreign_session), 64u);
  EXPECT_EQ(lane.opener->count(FrameStatus::foreign_lane), 32u);
  EXPECT_EQ(lane.opener->count(FrameStatus::out_of_order), 64u);
}

TEST(FrameCrypto, ForgedHeaderTypeIsForged) {
  Lane lane;
  auto frame = lane.seal(random_bytes(10), 1);
  frame[1] = 2;  // the engine's frame type is authenticated
  EXPECT_EQ(lane.open(frame), FrameStatus::forged);
}

TEST(FrameCrypto, ReplayedFrameIsRejectedAndCounted) {
  Lane lane;
  auto f0 = lane.seal(random_bytes(10));
  auto f1 = lane.seal(random_bytes(10));
  ASSERT_EQ(lane.open(f0), FrameStatus::ok);
  EXPECT_EQ(lane.open(f0), FrameStatus::replayed);
  ASSERT_EQ(lane.open(f1), FrameStatus::ok);
  EXPECT_EQ(lane.open(f0), FrameStatus::replayed);
  EXPECT_EQ(lane.opener->count(FrameStatus::replayed), 2u);
  EXPECT_FALSE(frame_status_closes_lane(FrameStatus::replayed));
}

TEST(FrameCrypto, SkippedCounterOnAnOrderedLaneIsOutOfOrder) {
  Lane lane;
  auto f0 = lane.seal(random_bytes(10));
  auto f1 = lane.seal(random_bytes(10));
  EXPECT_EQ(lane.open(f1), FrameStatus::out_of_order);
  EXPECT_TRUE(frame_status_closes_lane(FrameStatus::out_of_order));
  EXPECT_EQ(lane.open(f0), FrameStatus::ok);
  EXPECT_EQ(lane.open(f1), FrameStatus::ok);
}

TEST(FrameCrypto, FrameFromAnOlderSessionIsForeignAndHarmless) {
  LaneSecret old_secret = random_secret();
  const std::uint64_t old_session = 0xAAAA, new_session = 0xBBBB;
  LaneKeys old_keys = keys_for(old_session, old_secret);
  auto old_sealer = FrameSealer::create(old_keys.for_direction(kDir), old_session, kLane, kDir);
  ASSERT_TRUE(old_sealer);
  std::vector<std::uint8_t> stale(sealed_frame_size(10));
  ASSERT_EQ(old_sealer.value().seal(1, random_bytes(10), stale), FrameStatus::ok);

  Lane lane(Ordering::strict, new_session);
  EXPECT_EQ(lane.open(stale), FrameStatus::foreign_session);
  EXPECT_FALSE(frame_status_closes_lane(FrameStatus::foreign_session));
  // The new session goes on: its frame 0 still opens.
  ASSERT_EQ(lane.open(lane.seal(random_bytes(10))), FrameStatus::ok);
  EXPECT_EQ(lane.opener->count(FrameStatus::foreign_session), 1u);

  // A stale frame re-labelled with the new session id is caught by the tag.
  stale[8 + 6] = 0xBB;
  stale[8 + 7] = 0xBB;
  stale[20 + 7] = 1;  // and with the counter the lane expects next
  EXPECT_EQ(lane.open(stale), FrameStatus::forged);
}

TEST(FrameCrypto, FrameFromAnotherLaneIsForeign) {
  LaneSecret secret = random_secret();
  auto keys = derive_lane_keys(secret, kSession, 1);
  auto keys2 = derive_lane_keys(secret, kSession, 2);
  ASSERT_TRUE(keys && keys2);
  auto sealer1 = FrameSealer::create(keys.value().for_direction(kDir), kSession, 1, kDir);
  auto opener2 = FrameOpener::create(keys2.value().for_direction(kDir), kSession, 2, kDir);
  ASSERT_TRUE(sealer1 && opener2);
  std::vector<std::uint8_t> frame(sealed_frame_size(5)), out(5);
  ASSERT_EQ(sealer1.value().seal(1, random_bytes(5), frame), FrameStatus::ok);
  OpenedFrame f;
  EXPECT_EQ(opener2.value().open(frame, out, f), FrameStatus::foreign_lane);
  frame[16 + 3] = 2;  // claim lane 2: the key and associated data still differ
  EXPECT_EQ(opener2.value().open(frame, out, f), FrameStatus::forged);
}

TEST(FrameCrypto, ReflectedFrameIsWrongDirection) {
  LaneSecret secret = random_secret();
  LaneKeys k = keys_for(kSession, secret);
  auto our_sealer = FrameSealer::create(k.for_direction(Direction::server_to_client), kSession, kLane,
                                        Direction::server_to_client);
  auto our_opener = FrameOpener::create(k.for_direction(Direction::client_to_server), kSession, kLane,
                                        Direction::client_to_server);
  ASSERT_TRUE(our_sealer && our_opener);
  std::vector<std::uint8_t> frame(sealed_frame_size(5)), out(5);
  ASSERT_EQ(our_sealer.value().seal(1, random_bytes(5), frame), FrameStatus::ok);
  OpenedFrame f;
  EXPECT_EQ(our_opener.value().open(frame, out, f), FrameStatus::wrong_direction);
}

TEST(FrameCrypto, MalformedFramesAreBadHeader) {
  Lane lane;
  auto frame = lane.seal(random_bytes(10));
  EXPECT_EQ(lane.open(std::span(frame).first(20)), FrameStatus::bad_header);
  auto truncated = frame;
  truncated.pop_back();
  EXPECT_EQ(lane.open(truncated), FrameStatus::bad_header);
  auto version = frame;
  version[0] = 2;
  EXPECT_EQ(lane.open(version), FrameStatus::bad_header);
  auto reserved = frame;
  reserved[30] = 1;
  EXPECT_EQ(lane.open(reserved), FrameStatus::bad_header);
  EXPECT_EQ(lane.open(frame), FrameStatus::ok);
}

TEST(FrameCrypto, SmallBuffersAreRefusedWithoutSideEffects) {
  Lane lane;
  auto payload = random_bytes(100);
  std::vector<std::uint8_t> small(sealed_frame_size(100) - 1);
  EXPECT_EQ(lane.sealer->seal(1, payload, small), FrameStatus::buffer_too_small);
  EXPECT_EQ(lane.sealer->next_counter(), 0u);
  auto frame = lane.seal(payload);
  std::vector<std::uint8_t> out(99);
  OpenedFrame f;
  EXPECT_EQ(lane.opener->open(frame, out, f), FrameStatus::buffer_too_small);
  EXPECT_EQ(lane.open(frame), FrameStatus::ok);
}

TEST(FrameCrypto, CounterLimitStopsSealing) {
  Lane lane(Ordering::strict, kSession, kLane, SealLimits{3, UINT64_MAX});
  for (int i = 0; i < 3; ++i) lane.seal(random_bytes(1));
  std::vector<std::uint8_t> frame(sealed_frame_size(1));
  EXPECT_EQ(lane.sealer->seal(1, random_bytes(1), frame), FrameStatus::counter_exhausted);
  EXPECT_EQ(lane.sealer->next_counter(), 3u);
}

TEST(FrameCrypto, ByteLimitStopsSealing) {
  Lane lane(Ordering::strict, kSession, kLane, SealLimits{UINT64_MAX, 1000});
  lane.seal(random_bytes(600));
  std::vector<std::uint8_t> frame(sealed_frame_size(500));
  EXPECT_EQ(lane.sealer->seal(1, random_bytes(500), frame), FrameStatus::key_exhausted);
  lane.seal(random_bytes(400));  // exactly up to the limit is fine
  EXPECT_EQ(lane.sealer->seal(1, random_bytes(1), frame), FrameStatus::key_exhausted);
}

TEST(FrameCrypto, WindowedOpenerAcceptsReorderingButNotReplays) {
  Lane lane(Ordering::window);
  std::vector<std::vector<std::uint8_t>> frames;
  for (int i = 0; i < 2100; ++i) frames.push_back(lane.seal(random_bytes(8)));
  EXPECT_EQ(lane.open(frames[1500]), FrameStatus::ok);
  EXPECT_EQ(lane.open(frames[1000]), FrameStatus::ok);  // 500 behind
  EXPECT_EQ(lane.open(frames[1499]), FrameStatus::ok);
  EXPECT_EQ(lane.open(frames[1000]), FrameStatus::replayed);
  EXPECT_EQ(lane.open(frames[100]), FrameStatus::too_old);
  EXPECT_EQ(lane.open(frames[2099]), FrameStatus::ok);
  EXPECT_EQ(lane.open(frames[1000]), FrameStatus::too_old);  // 1099 behind now
  auto forged = frames[2098];
  forged.back() ^= 1;
  EXPECT_EQ(lane.open(forged), FrameStatus::forged);
  EXPECT_EQ(lane.open(frames[2098]), FrameStatus::ok);  // the forgery did not burn the counter
  EXPECT_EQ(lane.opener->count(FrameStatus::too_old), 2u);
  EXPECT_EQ(lane.opener->count(FrameStatus::replayed), 1u);
}

TEST(FrameCrypto, StatusNamesAreDistinct) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kFrameStatusCount; ++i) names.insert(frame_status_name(static_cast<FrameStatus>(i)));
  EXPECT_EQ(names.size(), kFrameStatusCount);
}

// A printout, not an assertion: real-time speed belongs in benchmarks, but
// `ctest -V` shows whether sealing keeps up with the lanes.
TEST(FrameCrypto, ThroughputPrintout) {
  Lane lane;
  constexpr std::size_t kFrame = 64 * 1024;
  constexpr int kFrames = 2048;  // 128 MiB each way
  std::vector<std::uint8_t> buf(sealed_frame_size(kFrame));
  auto body = std::span(buf).subspan(kFrameHeaderSize, kFrame);
  RAND_bytes(body.data(), static_cast<int>(kFrame));
  OpenedFrame f;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kFrames; ++i) ASSERT_EQ(lane.sealer->seal(1, body, buf), FrameStatus::ok);
  auto t1 = std::chrono::steady_clock::now();
  Lane lane2;
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_EQ(lane2.sealer->seal(1, body, buf), FrameStatus::ok);
    ASSERT_EQ(lane2.opener->open(buf, body, f), FrameStatus::ok);
  }
  auto t2 = std::chrono::steady_clock::now();
  double bytes = double(kFrame) * kFrames;
  double seal_gbs = bytes / std::chrono::duration<double>(t1 - t0).count() / 1e9;
  double pair_gbs = bytes / std::chrono::duration<double>(t2 - t1).count() / 1e9;
  std::printf("[ perf     ] AES-256-GCM 64 KiB frames, one core: seal %.2f GB/s, seal+open %.2f GB/s of payload\n",
              seal_gbs, pair_gbs);
  RecordProperty("seal_GBps", std::to_string(seal_gbs));
  RecordProperty("seal_open_GBps", std::to_string(pair_gbs));
}

}  // namespace
}  // namespace braid::security
