#include "engine/security/lane_keys.h"

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <set>

namespace braid::security {
namespace {

LaneSecret random_secret() {
  LaneSecret s;
  RAND_bytes(s.data(), static_cast<int>(s.size()));
  return s;
}

std::string hex(const std::uint8_t* p, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += "0123456789abcdef"[p[i] >> 4], out += "0123456789abcdef"[p[i] & 15];
  return out;
}

TEST(LaneKeys, DeterministicForTheSameInputs) {
  LaneSecret secret = random_secret();
  auto a = derive_lane_keys(secret, 42, 7);
  auto b = derive_lane_keys(secret, 42, 7);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a.value().client_to_server.key == b.value().client_to_server.key);
  EXPECT_TRUE(a.value().server_to_client.nonce_salt == b.value().server_to_client.nonce_salt);
}

TEST(LaneKeys, EveryLaneAndDirectionHasItsOwnKeys) {
  LaneSecret secret = random_secret();
  std::set<std::string> keys, salts;
  for (std::uint32_t lane = 0; lane < 8; ++lane) {
    auto k = derive_lane_keys(secret, 42, lane);
    ASSERT_TRUE(k);
    for (const DirectionKeys* d : {&k.value().client_to_server, &k.value().server_to_client}) {
      keys.insert(hex(d->key.data(), d->key.size()));
      salts.insert(hex(d->nonce_salt.data(), d->nonce_salt.size()));
    }
  }
  EXPECT_EQ(keys.size(), 16u);
  EXPECT_EQ(salts.size(), 16u);
}

TEST(LaneKeys, SessionIdAndSecretChangeEverything) {
  LaneSecret secret = random_secret(), other = random_secret();
  auto base = derive_lane_keys(secret, 1, 0);
  auto other_session = derive_lane_keys(secret, 2, 0);
  auto other_secret = derive_lane_keys(other, 1, 0);
  ASSERT_TRUE(base && other_session && other_secret);
  EXPECT_FALSE(base.value().client_to_server.key == other_session.value().client_to_server.key);
  EXPECT_FALSE(base.value().client_to_server.key == other_secret.value().client_to_server.key);
}

TEST(LaneKeys, RolesPickOppositeDirections) {
  EXPECT_EQ(sending_direction(Role::client), receiving_direction(Role::server));
  EXPECT_EQ(sending_direction(Role::server), receiving_direction(Role::client));
  EXPECT_NE(sending_direction(Role::client), sending_direction(Role::server));
}

}  // namespace
}  // namespace braid::security
