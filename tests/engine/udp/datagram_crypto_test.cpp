// Sealing and opening single datagrams: round trip, and each way a datagram
// is refused (forged, replayed, too old, other lane, reflected, other
// session), with the opener's state untouched by refusals.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <vector>

#include "core/transport/byte_cursor.hpp"
#include "engine/udp/datagram_crypto.hpp"
#include "loopback_pair.hpp"

namespace braid::udp::test {
namespace {

using security::Direction;
using transport::PacketKind;

constexpr uint64_t kSession = 0xabcdef0123456789ULL;
constexpr uint32_t kLane = 5;

struct Keys {
  security::LaneKeys keys = security::derive_lane_keys(test_secret(), kSession, kLane).value();
};

std::vector<uint8_t> make_packet(PacketKind kind, uint32_t lane, uint64_t pn, size_t body = 100) {
  std::vector<uint8_t> p(transport::kHeaderSize + body + transport::kAeadTagSize);
  transport::ByteWriter w(p);
  transport::encode_header(w, transport::PacketHeader{kind, lane, pn});
  for (size_t i = 0; i < body; ++i) p[transport::kHeaderSize + i] = static_cast<uint8_t>(i * 7 + pn);
  return p;
}

std::vector<uint8_t> sealed(DatagramSealer& s, PacketKind kind, uint64_t pn, uint32_t lane = kLane) {
  auto p = make_packet(kind, lane, pn);
  EXPECT_EQ(s.seal(p, p.size() - transport::kAeadTagSize), FrameStatus::ok);
  return p;
}

class DatagramCrypto : public ::testing::Test {
 protected:
  Keys k;
  DatagramSealer sealer = DatagramSealer::create(k.keys.client_to_server, kSession).value();
  DatagramOpener opener =
      DatagramOpener::create(k.keys.client_to_server, kSession, OpenerExpect{PacketKind::data, kLane}).value();
};

TEST_F(DatagramCrypto, RoundTripRestoresThePlaintextAndHidesIt) {
  const auto plain = make_packet(PacketKind::data, kLane, 42);
  auto d = sealed(sealer, PacketKind::data, 42);
  // The header stays in the clear; the frames do not.
  EXPECT_TRUE(std::equal(d.begin(), d.begin() + transport::kHeaderSize, plain.begin()));
  EXPECT_FALSE(std::equal(d.begin() + transport::kHeaderSize, d.end() - 16, plain.begin() + transport::kHeaderSize));
  ASSERT_EQ(opener.open(d), FrameStatus::ok);
  EXPECT_TRUE(std::equal(d.begin(), d.end() - 16, plain.begin()));
}

// The datagram is what the header comment (and the peer) says, computed
// here with plain EVP calls and the AAD fed in its two parts: nonce = salt
// XOR packet number, AAD = session id (big endian) || the 13 clear header
// bytes. Whatever the sealer does to save calls, the bytes must not change.
TEST_F(DatagramCrypto, SealsTheDocumentedLayout) {
  const uint64_t pn = 0x0102030405ULL;
  const auto plain = make_packet(PacketKind::data, kLane, pn, 1400);
  auto d = plain;
  ASSERT_EQ(sealer.seal(d, d.size() - transport::kAeadTagSize), FrameStatus::ok);

  const security::DirectionKeys& keys = k.keys.client_to_server;
  uint8_t nonce[security::kNonceSize];
  for (size_t i = 0; i < security::kNonceSize; ++i) nonce[i] = keys.nonce_salt.data()[i];
  for (int i = 0; i < 8; ++i) nonce[security::kNonceSize - 1 - static_cast<size_t>(i)] ^= static_cast<uint8_t>(pn >> (8 * i));
  uint8_t session[8];
  for (int i = 0; i < 8; ++i) session[i] = static_cast<uint8_t>(kSession >> (56 - 8 * i));
  const size_t size = plain.size() - transport::kAeadTagSize;
  std::vector<uint8_t> want(plain.size());
  std::copy(plain.begin(), plain.begin() + transport::kHeaderSize, want.begin());
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  int len = 0;
  ASSERT_EQ(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), nullptr, keys.key.data(), nonce), 1);
  ASSERT_EQ(EVP_EncryptUpdate(c, nullptr, &len, session, 8), 1);
  ASSERT_EQ(EVP_EncryptUpdate(c, nullptr, &len, plain.data(), static_cast<int>(transport::kHeaderSize)), 1);
  ASSERT_EQ(EVP_EncryptUpdate(c, want.data() + transport::kHeaderSize, &len, plain.data() + transport::kHeaderSize,
                              static_cast<int>(size - transport::kHeaderSize)), 1);
  ASSERT_EQ(EVP_EncryptFinal_ex(c, want.data() + size, &len), 1);
  ASSERT_EQ(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, want.data() + size), 1);
  EVP_CIPHER_CTX_free(c);
  EXPECT_EQ(d, want);
  ASSERT_EQ(opener.open(want), FrameStatus::ok);
  EXPECT_TRUE(std::equal(want.begin(), want.end() - 16, plain.begin()));
}

TEST_F(DatagramCrypto, AnyFlippedBitIsForged) {
  const auto good = sealed(sealer, PacketKind::data, 7);
  // Header bytes (packet number, here: byte 12), body and tag are all covered.
  for (size_t at : {size_t{12}, size_t{20}, good.size() - 1}) {
    auto d = good;
    d[at] ^= 0x01;
    EXPECT_EQ(opener.open(d), FrameStatus::forged) << "byte " << at;
  }
  // A refusal moved nothing: the genuine datagram still opens.
  auto d = good;
  EXPECT_EQ(opener.open(d), FrameStatus::ok);
  EXPECT_EQ(opener.count(FrameStatus::forged), 3u);
  EXPECT_EQ(opener.rejected(), 3u);
}

TEST_F(DatagramCrypto, ReplayedAndTooOldAreRefused) {
  auto first = sealed(sealer, PacketKind::data, 1);
  auto copy = first;
  ASSERT_EQ(opener.open(first), FrameStatus::ok);
  EXPECT_EQ(opener.open(copy), FrameStatus::replayed);
  auto late = sealed(sealer, PacketKind::data, 0);  // out of order but fresh: fine
  EXPECT_EQ(opener.open(late), FrameStatus::ok);
  auto far = sealed(sealer, PacketKind::data, 5000);
  ASSERT_EQ(opener.open(far), FrameStatus::ok);
  auto old = sealed(sealer, PacketKind::data, 2);  // 4998 behind: outside the 1024 window
  EXPECT_EQ(opener.open(old), FrameStatus::too_old);
}

TEST_F(DatagramCrypto, OtherLaneReflectedAndOtherSessionAreRefused) {
  auto other_lane = sealed(sealer, PacketKind::data, 3, kLane + 1);
  EXPECT_EQ(opener.open(other_lane), FrameStatus::foreign_lane);
  auto feedback = sealed(sealer, PacketKind::feedback, 4);
  EXPECT_EQ(opener.open(feedback), FrameStatus::wrong_direction);
  // Sealed with the other direction's key (a reflected packet that lies about its kind).
  auto reverse = DatagramSealer::create(k.keys.server_to_client, kSession).value();
  auto reflected = sealed(reverse, PacketKind::data, 5);
  EXPECT_EQ(opener.open(reflected), FrameStatus::forged);
  // Another session: the session id is in the AAD, never on the wire.
  auto stale = DatagramSealer::create(k.keys.client_to_server, kSession + 1).value();
  auto old_session = sealed(stale, PacketKind::data, 6);
  EXPECT_EQ(opener.open(old_session), FrameStatus::forged);
  std::vector<uint8_t> runt(10, 0x40);
  EXPECT_EQ(opener.open(runt), FrameStatus::bad_header);
}

TEST_F(DatagramCrypto, GatheredPayloadsSealToTheSameBytesAsACopyInPlace) {
  // Two payloads at odd offsets and lengths (GCM's partial blocks between
  // them), taken from elsewhere; the packet's bytes there are garbage.
  const auto plain = make_packet(PacketKind::data, kLane, 9, 300);
  const std::vector<uint8_t> first(plain.begin() + 40, plain.begin() + 117);
  const std::vector<uint8_t> second(plain.begin() + 130, plain.begin() + 301);
  auto copied = plain;
  const size_t size = plain.size() - transport::kAeadTagSize;
  ASSERT_EQ(sealer.seal(copied, size), FrameStatus::ok);
  auto gathered = plain;
  std::fill(gathered.begin() + 40, gathered.begin() + 117, uint8_t{0xee});
  std::fill(gathered.begin() + 130, gathered.begin() + 301, uint8_t{0xee});
  const std::array<DatagramSealer::Gathered, 2> from{{{40, first}, {130, second}}};
  DatagramSealer again = DatagramSealer::create(k.keys.client_to_server, kSession).value();
  ASSERT_EQ(again.seal(gathered, size, from), FrameStatus::ok);
  EXPECT_EQ(gathered, copied);
  ASSERT_EQ(opener.open(gathered), FrameStatus::ok);
  EXPECT_TRUE(std::equal(gathered.begin(), gathered.end() - 16, plain.begin()));
}

TEST_F(DatagramCrypto, GatheredPayloadsOutOfOrderOrPastTheEndAreRefused) {
  auto p = make_packet(PacketKind::data, kLane, 3, 300);
  const size_t size = p.size() - transport::kAeadTagSize;
  const std::vector<uint8_t> bytes(50, 1);
  const std::array<DatagramSealer::Gathered, 2> backwards{{{200, bytes}, {100, bytes}}};
  EXPECT_EQ(sealer.seal(p, size, backwards), FrameStatus::buffer_too_small);
  const std::array<DatagramSealer::Gathered, 1> past{{{size - 10, bytes}}};
  EXPECT_EQ(sealer.seal(p, size, past), FrameStatus::buffer_too_small);
  const std::array<DatagramSealer::Gathered, 1> in_header{{{2, bytes}}};
  EXPECT_EQ(sealer.seal(p, size, in_header), FrameStatus::buffer_too_small);
  EXPECT_EQ(sealer.bytes_sealed(), 0u);
}

TEST_F(DatagramCrypto, SealNeedsRoomForTheTag) {
  auto p = make_packet(PacketKind::data, kLane, 1);
  EXPECT_EQ(sealer.seal(p, p.size()), FrameStatus::buffer_too_small);
  EXPECT_EQ(sealer.seal(p, 5), FrameStatus::buffer_too_small);
}

}  // namespace
}  // namespace braid::udp::test
