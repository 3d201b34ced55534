// Full sessions: a client and a server thread over a socketpair, each with its
// own identity and known-peers file (its own XDG-like config directory).
#include "engine/security/session.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "engine/security/lane_keys.h"
#include "engine/security/unique_fd.h"
#include "test_support.h"

namespace braid::security {
namespace {

using testing::TempDir;

// One braid host: a config directory, its identity, TLS context, known peers.
struct Host {
  explicit Host(std::string n) : name(std::move(n)) { load(); }

  void load() {
    auto id = Identity::load_or_create(dir.path() / "braid", name);
    ASSERT_TRUE(id) << id.error().message;
    identity.emplace(std::move(id.value()));
    auto tls_ctx = TlsContext::create(*identity);
    ASSERT_TRUE(tls_ctx) << tls_ctx.error().message;
    tls.emplace(std::move(tls_ctx.value()));
    auto kp = KnownPeers::load_in(dir.path() / "braid");
    ASSERT_TRUE(kp) << kp.error().message;
    known.emplace(std::move(kp.value()));
  }

  // A new key pair under the same name, as after reinstalling the host.
  void recreate_identity() {
    std::filesystem::remove(dir.path() / "braid" / "identity.key");
    std::filesystem::remove(dir.path() / "braid" / "identity.crt");
    load();
  }

  std::string name;
  TempDir dir;
  std::optional<Identity> identity;
  std::optional<TlsContext> tls;
  std::optional<KnownPeers> known;
};

struct Outcome {
  UniqueFd client_fd, server_fd;  // the sessions borrow these: keep them open as long
  std::optional<Result<Session>> client, server;
};

Outcome run_session(Host& client, Host& server, const PairingCode* client_code, const PairingCode* server_code) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Outcome out;
  out.client_fd.reset(sv[0]);
  out.server_fd.reset(sv[1]);
  const int cfd = sv[0], sfd = sv[1];
  std::thread st([&] {
    SessionOptions o{Role::server, server_code, 10'000};
    out.server.emplace(Session::establish(sfd, *server.tls, *server.identity, *server.known, o));
    // Like the engine: a failed session closes its socket, so the peer never waits.
    if (!*out.server) ::shutdown(sfd, SHUT_RDWR);
  });
  SessionOptions o{Role::client, client_code, 10'000};
  out.client.emplace(Session::establish(cfd, *client.tls, *client.identity, *client.known, o));
  if (!*out.client) ::shutdown(cfd, SHUT_RDWR);
  st.join();
  return out;
}

PairingCode new_code() {
  auto c = PairingCode::generate();
  EXPECT_TRUE(c);
  return c.value();
}

bool pinned(Host& h, const Host& peer) {
  auto kp = KnownPeers::load(h.known->file());  // from disk, not memory
  return kp && kp.value().check(peer.name, peer.identity->fingerprint()).verdict == KnownPeers::Verdict::pinned;
}

TEST(Session, RightCodeAuthenticatesAndPinsBothSides) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  auto typed = PairingCode::parse(code.display());  // the sender types what the receiver printed
  ASSERT_TRUE(typed);
  Outcome r = run_session(alice, bob, &typed.value(), &code);
  ASSERT_TRUE(*r.client) << r.client->error().message;
  ASSERT_TRUE(*r.server) << r.server->error().message;
  Session& c = r.client->value();
  Session& s = r.server->value();
  EXPECT_EQ(c.peer().how, PeerAuth::paired);
  EXPECT_EQ(s.peer().how, PeerAuth::paired);
  EXPECT_EQ(c.peer().name, "bob");
  EXPECT_EQ(s.peer().name, "alice");
  EXPECT_EQ(c.peer().fingerprint, bob.identity->fingerprint());
  EXPECT_EQ(s.peer().fingerprint, alice.identity->fingerprint());
  EXPECT_TRUE(pinned(alice, bob));
  EXPECT_TRUE(pinned(bob, alice));

  // Both ends agree on the session's id and lane secret, and can talk.
  EXPECT_EQ(c.session_id(), s.session_id());
  EXPECT_TRUE(c.lane_secret() == s.lane_secret());
  std::array<std::uint8_t, 5> hello{'h', 'e', 'l', 'l', 'o'}, got{};
  std::thread w([&] {
    Status sent = c.send(hello);
    EXPECT_TRUE(sent) << sent.error().message;
  });
  Status received = s.receive(got);
  EXPECT_TRUE(received) << received.error().message;
  w.join();
  EXPECT_EQ(got, hello);
}

TEST(Session, WrongCodeFailsOnBothSidesAndPinsNothing) {
  Host alice("alice"), bob("bob");
  PairingCode right = new_code(), wrong = new_code();
  Outcome r = run_session(alice, bob, &wrong, &right);
  ASSERT_FALSE(*r.client);
  ASSERT_FALSE(*r.server);
  EXPECT_EQ(r.client->error().code, Errc::pairing_failed) << r.client->error().message;
  EXPECT_EQ(r.server->error().code, Errc::pairing_failed) << r.server->error().message;
  EXPECT_NE(r.server->error().message.find("wrong pairing code"), std::string::npos) << r.server->error().message;
  EXPECT_NE(r.client->error().message.find("rejected our pairing code"), std::string::npos) << r.client->error().message;
  EXPECT_FALSE(pinned(alice, bob));
  EXPECT_FALSE(pinned(bob, alice));
  EXPECT_FALSE(std::filesystem::exists(bob.known->file()));
}

TEST(Session, UnknownPeerWithoutCodeNeedsPairing) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  Outcome r = run_session(alice, bob, nullptr, &code);
  ASSERT_FALSE(*r.client);
  ASSERT_FALSE(*r.server);
  EXPECT_EQ(r.client->error().code, Errc::pairing_required);
  EXPECT_EQ(r.server->error().code, Errc::pairing_required);
  EXPECT_NE(r.client->error().message.find("--code"), std::string::npos) << r.client->error().message;
  EXPECT_FALSE(pinned(bob, alice));
}

TEST(Session, SecondSessionBetweenPinnedPeersNeedsNoCode) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  Outcome first = run_session(alice, bob, &code, &code);
  ASSERT_TRUE(*first.client && *first.server);

  Outcome second = run_session(alice, bob, nullptr, nullptr);
  ASSERT_TRUE(*second.client) << second.client->error().message;
  ASSERT_TRUE(*second.server) << second.server->error().message;
  EXPECT_EQ(second.client->value().peer().how, PeerAuth::pinned);
  EXPECT_EQ(second.server->value().peer().how, PeerAuth::pinned);
  // Every session has its own id and secret, so old frames never fit.
  EXPECT_NE(second.client->value().session_id(), first.client->value().session_id());
  EXPECT_FALSE(second.client->value().lane_secret() == first.client->value().lane_secret());

  // A code given anyway is not needed and does no harm.
  Outcome third = run_session(alice, bob, &code, &code);
  ASSERT_TRUE(*third.client && *third.server);
  EXPECT_EQ(third.client->value().peer().how, PeerAuth::pinned);
}

TEST(Session, ChangedClientIdentityIsRefusedWithTheMessage) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  ASSERT_TRUE(*run_session(alice, bob, &code, &code).server);
  Fingerprint old_fp = alice.identity->fingerprint();
  alice.recreate_identity();
  Fingerprint new_fp = alice.identity->fingerprint();
  ASSERT_NE(old_fp, new_fp);

  // Even with a fresh, right code: a pin is never overridden by a code.
  PairingCode code2 = new_code();
  Outcome r = run_session(alice, bob, &code2, &code2);
  ASSERT_FALSE(*r.server);
  ASSERT_FALSE(*r.client);
  const Error& e = r.server->error();
  EXPECT_EQ(e.code, Errc::peer_key_changed);
  EXPECT_NE(e.message.find("'alice'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(old_fp.to_string()), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(new_fp.to_string()), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(bob.known->file().string()), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("pairing code does not override"), std::string::npos) << e.message;
  EXPECT_EQ(r.client->error().code, Errc::peer_refused_us) << r.client->error().message;
  EXPECT_NE(r.client->error().message.find(new_fp.to_string()), std::string::npos) << r.client->error().message;
  EXPECT_FALSE(pinned(bob, alice));  // the new key was not pinned
}

TEST(Session, ChangedServerIdentityIsRefusedByTheClient) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  ASSERT_TRUE(*run_session(alice, bob, &code, &code).client);
  Fingerprint old_fp = bob.identity->fingerprint();
  bob.recreate_identity();
  Outcome r = run_session(alice, bob, nullptr, nullptr);
  ASSERT_FALSE(*r.client);
  ASSERT_FALSE(*r.server);
  EXPECT_EQ(r.client->error().code, Errc::peer_key_changed);
  EXPECT_NE(r.client->error().message.find(old_fp.to_string()), std::string::npos);
  EXPECT_NE(r.client->error().message.find(bob.identity->fingerprint().to_string()), std::string::npos);
  EXPECT_EQ(r.server->error().code, Errc::peer_refused_us);
}

TEST(Session, RemovingTheOldEntryAllowsPairingAgain) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  ASSERT_TRUE(*run_session(alice, bob, &code, &code).server);
  alice.recreate_identity();
  std::filesystem::remove(bob.known->file());  // what the message tells the user to do (whole file here)
  bob.load();
  Outcome r = run_session(alice, bob, &code, &code);
  ASSERT_TRUE(*r.server) << r.server->error().message;
  ASSERT_TRUE(*r.client) << r.client->error().message;
  EXPECT_TRUE(pinned(bob, alice));
}

TEST(Session, PeerThatForgotUsNeedsTheCodeAgain) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  ASSERT_TRUE(*run_session(alice, bob, &code, &code).server);
  std::filesystem::remove(bob.known->file());
  bob.load();
  Outcome without = run_session(alice, bob, nullptr, nullptr);
  ASSERT_FALSE(*without.client);
  EXPECT_EQ(without.client->error().code, Errc::pairing_required);
  EXPECT_NE(without.client->error().message.find("does not know this host"), std::string::npos)
      << without.client->error().message;
  Outcome with = run_session(alice, bob, &code, &code);
  ASSERT_TRUE(*with.client && *with.server);
  EXPECT_EQ(with.server->value().peer().how, PeerAuth::paired);
}

TEST(Session, LaneKeysMatchOnBothEnds) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  Outcome r = run_session(alice, bob, &code, &code);
  ASSERT_TRUE(*r.client && *r.server);
  Session& c = r.client->value();
  Session& s = r.server->value();
  auto ck = derive_lane_keys(c.lane_secret(), c.session_id(), 3);
  auto sk = derive_lane_keys(s.lane_secret(), s.session_id(), 3);
  ASSERT_TRUE(ck && sk);
  EXPECT_TRUE(ck.value().client_to_server.key == sk.value().client_to_server.key);
  EXPECT_TRUE(ck.value().server_to_client.nonce_salt == sk.value().server_to_client.nonce_salt);

  std::array<std::uint8_t, 32> e1{}, e2{};
  ASSERT_TRUE(c.export_keying_material("EXPORTER-braid test", {}, e1));
  ASSERT_TRUE(s.export_keying_material("EXPORTER-braid test", {}, e2));
  EXPECT_EQ(e1, e2);
}

TEST(Session, SilentPeerTimesOut) {
  Host bob("bob");
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  SessionOptions o{Role::server, nullptr, 200};
  auto r = Session::establish(b.get(), *bob.tls, *bob.identity, *bob.known, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::timed_out) << r.error().message;
}

TEST(Session, ClosedConnectionIsReported) {
  Host bob("bob");
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd b(sv[1]);
  ::close(sv[0]);
  SessionOptions o{Role::server, nullptr, 2000};
  auto r = Session::establish(b.get(), *bob.tls, *bob.identity, *bob.known, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::connection_closed) << r.error().message;
}

TEST(Session, Tls12ClientIsRefused) {
  Host bob("bob");
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  std::thread old_client([&] {
    ossl::SslCtx ctx(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_set_max_proto_version(ctx.get(), TLS1_2_VERSION);
    ossl::Ssl ssl(SSL_new(ctx.get()));
    SSL_set_fd(ssl.get(), a.get());
    EXPECT_NE(SSL_connect(ssl.get()), 1);
    ::shutdown(a.get(), SHUT_RDWR);
  });
  SessionOptions o{Role::server, nullptr, 5000};
  auto r = Session::establish(b.get(), *bob.tls, *bob.identity, *bob.known, o);
  old_client.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::handshake_failed) << r.error().message;
}

}  // namespace
}  // namespace braid::security
