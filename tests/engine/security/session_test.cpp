// Full sessions: a client and a server thread over a socketpair, each with its
// own identity and known-peers file (its own XDG-like config directory).
#include "engine/security/session.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "engine/security/code_keeper.h"
#include "engine/security/lane_keys.h"
#include "engine/security/spake2.h"
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

// What the client's user said: the label they addressed the server by, and
// the label to pin it under if it pairs (send FILE LABEL, send --name).
struct ClientChoice {
  std::string addressed_label;
  std::string pin_label;
};

Outcome run_session(Host& client, Host& server, const PairingCode* client_code, const PairingCode* server_code,
                    CodeKeeper* keeper = nullptr, const ClientChoice& choice = {}) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Outcome out;
  out.client_fd.reset(sv[0]);
  out.server_fd.reset(sv[1]);
  const int cfd = sv[0], sfd = sv[1];
  std::thread st([&] {
    SessionOptions o{Role::server, server_code, 10'000, keeper};
    out.server.emplace(Session::establish(sfd, *server.tls, *server.identity, *server.known, o));
    // Like the engine: a failed session closes its socket, so the peer never waits.
    if (!*out.server) ::shutdown(sfd, SHUT_RDWR);
  });
  SessionOptions o{Role::client, client_code, 10'000};
  o.addressed_label = choice.addressed_label;
  o.pin_label = choice.pin_label;
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
  return kp && kp.value().check(peer.identity->fingerprint()).verdict == KnownPeers::Verdict::pinned;
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

TEST(Session, ANewKeyUnderAKnownNameIsANewPeerThatPairsWithTheCode) {
  // Two machines both called "alice" (here: alice reinstalled, new key, same
  // name). The key is the identity: the second is a peer of its own.
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  ASSERT_TRUE(*run_session(alice, bob, &code, &code).server);
  Fingerprint old_fp = alice.identity->fingerprint();
  alice.recreate_identity();
  Fingerprint new_fp = alice.identity->fingerprint();
  ASSERT_NE(old_fp, new_fp);

  // Unknown without a code, like any new peer.
  Outcome without = run_session(alice, bob, nullptr, nullptr);
  ASSERT_FALSE(*without.server);
  EXPECT_EQ(without.server->error().code, Errc::pairing_required) << without.server->error().message;

  // With the right code it pairs, and both keys stay pinned under distinct labels.
  PairingCode code2 = new_code();
  Outcome r = run_session(alice, bob, &code2, &code2);
  ASSERT_TRUE(*r.server) << r.server->error().message;
  ASSERT_TRUE(*r.client) << r.client->error().message;
  EXPECT_EQ(r.server->value().peer().name, "alice-2");
  EXPECT_EQ(r.server->value().peer().host, "alice");
  auto kp = KnownPeers::load(bob.known->file());
  ASSERT_TRUE(kp);
  ASSERT_NE(kp.value().find_key(old_fp), nullptr);
  ASSERT_NE(kp.value().find_key(new_fp), nullptr);
  EXPECT_EQ(kp.value().find_key(old_fp)->label, "alice");
  EXPECT_EQ(kp.value().find_key(new_fp)->label, "alice-2");
  EXPECT_EQ(kp.value().find_key(new_fp)->host, "alice");
  EXPECT_FALSE(kp.value().find_key(new_fp)->paired.empty());
}

TEST(Session, APeerAddressedByItsLabelWithAnotherKeyIsRefusedLoudlyEvenWithTheCode) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  ASSERT_TRUE(*run_session(alice, bob, &code, &code).client);
  Fingerprint old_fp = bob.identity->fingerprint();
  bob.recreate_identity();
  PairingCode code2 = new_code();
  Outcome r = run_session(alice, bob, &code2, &code2, nullptr, ClientChoice{"bob", ""});
  ASSERT_FALSE(*r.client);
  ASSERT_FALSE(*r.server);
  const Error& e = r.client->error();
  EXPECT_EQ(e.code, Errc::peer_key_changed);
  EXPECT_NE(e.message.find("@@@ WARNING: THE IDENTITY OF PEER 'bob' HAS CHANGED @@@"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(old_fp.to_string()), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(bob.identity->fingerprint().to_string()), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(alice.known->file().string()), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("pairing code does not override"), std::string::npos) << e.message;
  EXPECT_EQ(r.server->error().code, Errc::peer_refused_us);
  EXPECT_FALSE(pinned(alice, bob));  // the new key was not pinned

  // Not addressed by that label, the new key is just an unknown peer: the code pairs it.
  Outcome by_address = run_session(alice, bob, &code2, &code2);
  ASSERT_TRUE(*by_address.client) << by_address.client->error().message;
  EXPECT_EQ(by_address.client->value().peer().name, "bob-2");
}

TEST(Session, AKnownKeyIsTrustedWhateverNameItClaimsAndPinLabelNamesANewPeer) {
  Host alice("alice"), bob("bob");
  PairingCode code = new_code();
  Outcome first = run_session(alice, bob, &code, &code, nullptr, ClientChoice{"", "my-nas"});
  ASSERT_TRUE(*first.client) << first.client->error().message;
  EXPECT_EQ(first.client->value().peer().name, "my-nas");
  EXPECT_EQ(first.client->value().peer().host, "bob");
  // Addressed by the label the user chose: pinned, no code.
  Outcome again = run_session(alice, bob, nullptr, nullptr, nullptr, ClientChoice{"my-nas", ""});
  ASSERT_TRUE(*again.client) << again.client->error().message;
  EXPECT_EQ(again.client->value().peer().how, PeerAuth::pinned);
  EXPECT_EQ(again.client->value().peer().name, "my-nas");
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

// ---- one-time codes: Session with the receiver's code keeper -----------------

TEST(Session, AKeeperCodePairsOneIdentityThenTheNextCode) {
  Host alice("alice"), bob("bob"), carol("carol");
  const PairingCode first = new_code();
  OneTimeCode keeper(first);
  Outcome r = run_session(alice, bob, &first, nullptr, &keeper);
  ASSERT_TRUE(*r.client) << r.client->error().message;
  ASSERT_TRUE(*r.server) << r.server->error().message;
  EXPECT_EQ(r.server->value().peer().how, PeerAuth::paired);
  ASSERT_TRUE(keeper.current());
  EXPECT_NE(keeper.current()->canonical(), first.canonical());  // spent: a new code is live

  // A second identity with the spent code is refused on both sides: to the
  // receiver it is a wrong guess at the code now live.
  Outcome second = run_session(carol, bob, &first, nullptr, &keeper);
  ASSERT_FALSE(*second.client);
  ASSERT_FALSE(*second.server);
  EXPECT_EQ(second.client->error().code, Errc::pairing_failed);
  EXPECT_EQ(second.server->error().code, Errc::pairing_failed);
  EXPECT_NE(second.client->error().message.find("rejected our pairing code"), std::string::npos)
      << second.client->error().message;
  EXPECT_EQ(keeper.failures(), 1u);
  EXPECT_FALSE(pinned(bob, carol));
  EXPECT_FALSE(pinned(carol, bob));

  const PairingCode next = *keeper.current();
  Outcome third = run_session(carol, bob, &next, nullptr, &keeper);
  ASSERT_TRUE(*third.client) << third.client->error().message;
  ASSERT_TRUE(*third.server) << third.server->error().message;
  EXPECT_TRUE(pinned(bob, carol));
}

TEST(Session, ThreeWrongCodesRetireTheKeepersCode) {
  Host alice("alice"), bob("bob");
  const PairingCode right = new_code();
  OneTimeCode keeper(right);
  for (unsigned i = 1; i <= CodeLedger::kMaxFailures; ++i) {
    const PairingCode wrong = new_code();
    Outcome r = run_session(alice, bob, &wrong, nullptr, &keeper);
    ASSERT_FALSE(*r.server);
    EXPECT_EQ(r.server->error().code, Errc::pairing_failed);
    EXPECT_NE(r.server->error().message.find("wrong pairing code"), std::string::npos) << r.server->error().message;
    if (i < CodeLedger::kMaxFailures) {
      EXPECT_EQ(keeper.current()->canonical(), right.canonical()) << i;
    }
  }
  EXPECT_NE(keeper.current()->canonical(), right.canonical());  // retired
  Outcome old = run_session(alice, bob, &right, nullptr, &keeper);
  ASSERT_FALSE(*old.client);
  EXPECT_EQ(old.client->error().code, Errc::pairing_failed);
  EXPECT_FALSE(pinned(bob, alice));
  const PairingCode next = *keeper.current();
  Outcome fresh = run_session(alice, bob, &next, nullptr, &keeper);
  ASSERT_TRUE(*fresh.client) << fresh.client->error().message;
  ASSERT_TRUE(*fresh.server) << fresh.server->error().message;
}

// ---- what a fake peer sees ------------------------------------------------------

// The peer check's framing, as session.cpp sends it: type, payload length, payload.
enum : std::uint8_t { kHello = 1, kShare = 2, kConfirm = 3, kAbort = 4, kDone = 5 };
constexpr std::uint8_t kVersion = 2;

// One end of a session played by hand over raw OpenSSL with a real host's
// certificate: it sends what the test says and records every message the
// real peer sends, in order.
class HandPlayedPeer {
 public:
  HandPlayedPeer(Host& host, int fd, bool as_server) : fd_(fd) {
    timeval tv{5, 0};  // a peer that never answers fails the test instead of hanging it
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssl_.reset(SSL_new(host.tls->get()));
    SSL_set_fd(ssl_.get(), fd);
    ok_ = (as_server ? SSL_accept(ssl_.get()) : SSL_connect(ssl_.get())) == 1;
  }
  bool ok() const { return ok_; }

  void send(std::uint8_t type, std::span<const std::uint8_t> payload) {
    std::vector<std::uint8_t> buf{type, static_cast<std::uint8_t>(payload.size())};
    buf.insert(buf.end(), payload.begin(), payload.end());
    EXPECT_EQ(SSL_write(ssl_.get(), buf.data(), static_cast<int>(buf.size())), static_cast<int>(buf.size()));
  }
  void send_hello() {
    const std::uint8_t hello[] = {kVersion, /*verdict unknown*/ 1, /*have code*/ 1};
    send(kHello, hello);
  }
  // Reads one message into the record; false if the peer closed or went silent.
  bool receive() {
    std::uint8_t head[2];
    if (!read_exactly(head, 2)) return false;
    std::vector<std::uint8_t> payload(head[1]);
    if (!read_exactly(payload.data(), payload.size())) return false;
    got_.push_back({head[0], std::move(payload)});
    return true;
  }
  // True if the peer sent nothing at all (not even a TLS record) for `ms`.
  bool silent_for(int ms) {
    if (SSL_pending(ssl_.get()) > 0) return false;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, ms) == 0;
  }
  std::vector<std::uint8_t> exporter() {
    std::vector<std::uint8_t> out(32);
    const std::string_view label = "EXPORTER-braid pairing v2";
    EXPECT_EQ(SSL_export_keying_material(ssl_.get(), out.data(), out.size(), label.data(), label.size(), nullptr, 0, 1), 1);
    return out;
  }
  std::vector<std::uint8_t> types() const {
    std::vector<std::uint8_t> t;
    for (const auto& m : got_) t.push_back(m.first);
    return t;
  }
  const std::vector<std::uint8_t>& payload(std::size_t i) const { return got_.at(i).second; }

 private:
  bool read_exactly(std::uint8_t* p, std::size_t n) {
    while (n > 0) {
      const int r = SSL_read(ssl_.get(), p, static_cast<int>(n));
      if (r <= 0) return false;
      p += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }

  int fd_;
  ossl::Ssl ssl_;
  bool ok_ = false;
  std::vector<std::pair<std::uint8_t, std::vector<std::uint8_t>>> got_;
};

Spake2Context pairing_context(const Host& server, const Host& client, const std::vector<std::uint8_t>& exporter) {
  const auto& s = server.identity->fingerprint().bytes();
  const auto& c = client.identity->fingerprint().bytes();
  const std::string_view protocol = "braid pairing v2";
  std::vector<std::uint8_t> aad(protocol.size() + exporter.size());
  std::copy(protocol.begin(), protocol.end(), aad.begin());
  std::copy(exporter.begin(), exporter.end(), aad.begin() + static_cast<std::ptrdiff_t>(protocol.size()));
  return Spake2Context{{s.begin(), s.end()}, {c.begin(), c.end()}, std::move(aad)};
}

Spake2Password password_of(const PairingCode& code) {
  auto w = spake2_password(std::span<const std::uint8_t>(
      reinterpret_cast<const std::uint8_t*>(code.canonical().data()), code.canonical().size()));
  EXPECT_TRUE(w);
  return w.value();
}

// Someone poses as the receiver (a spoofed address) and records everything
// the sender sends. The sender sends nothing after its HELLO until it has
// the receiver's share; then its share and confirmation, in that order. The
// confirmation verifies only under the guess the fake put into its share:
// one guess per attempt, chosen before the fake saw anything.
class FakeReceiver : public ::testing::TestWithParam<bool> {};

TEST_P(FakeReceiver, SenderSendsNothingCodeDependentBeforeTheReceiversShare) {
  const bool guessed_right = GetParam();
  Host alice("alice"), bob("bob");
  const PairingCode code = new_code();
  const PairingCode guess = guessed_right ? code : new_code();
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd cfd(sv[0]), sfd(sv[1]);
  std::optional<Result<Session>> client;
  std::thread sender([&] {
    SessionOptions o{Role::client, &code, 5'000};
    client.emplace(Session::establish(cfd.get(), *alice.tls, *alice.identity, *alice.known, o));
    if (!*client) ::shutdown(cfd.get(), SHUT_RDWR);
  });

  HandPlayedPeer fake(bob, sfd.get(), /*as_server=*/true);
  ASSERT_TRUE(fake.ok());
  fake.send_hello();
  ASSERT_TRUE(fake.receive());
  ASSERT_EQ(fake.types(), std::vector<std::uint8_t>{kHello});
  // Before our share: not one more byte from the sender.
  EXPECT_TRUE(fake.silent_for(300));
  ASSERT_EQ(fake.types().size(), 1u);

  auto pake = Spake2::start(Spake2::Side::a, pairing_context(bob, alice, fake.exporter()), password_of(guess));
  ASSERT_TRUE(pake);
  fake.send(kShare, pake.value().share());
  ASSERT_TRUE(fake.receive());
  ASSERT_TRUE(fake.receive());
  EXPECT_EQ(fake.types(), (std::vector<std::uint8_t>{kHello, kShare, kConfirm}));
  ASSERT_EQ(fake.payload(1).size(), kSpake2ShareSize);
  ASSERT_EQ(fake.payload(2).size(), kSpake2MacSize);
  auto keys = pake.value().finish(fake.payload(1));
  ASSERT_TRUE(keys) << keys.error().message;
  EXPECT_EQ(keys.value().verify_peer(fake.payload(2)), guessed_right);

  // The fake cannot confirm without the code: a made-up MAC.
  Spake2Mac made_up{};
  made_up.fill(0x5a);
  fake.send(kConfirm, guessed_right ? keys.value().confirmation : made_up);
  if (guessed_right) {
    ASSERT_TRUE(fake.receive());
    EXPECT_EQ(fake.types().back(), kDone);
  } else {
    ASSERT_TRUE(fake.receive());
    EXPECT_EQ(fake.types(), (std::vector<std::uint8_t>{kHello, kShare, kConfirm, kAbort}));
  }
  ::shutdown(sfd.get(), SHUT_RDWR);
  sender.join();
  ASSERT_TRUE(client.has_value());
  if (guessed_right) {
    EXPECT_TRUE(*client) << client->error().message;
  } else {
    ASSERT_FALSE(*client);
    EXPECT_EQ(client->error().code, Errc::pairing_failed) << client->error().message;
    EXPECT_NE(client->error().message.find("does not know our pairing code"), std::string::npos);
    EXPECT_FALSE(pinned(alice, bob));
  }
}

INSTANTIATE_TEST_SUITE_P(Guess, FakeReceiver, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "right" : "wrong"; });

// Someone poses as a sender to the real receiver: it gets the receiver's
// share (uniform whatever the code), and for a wrong guess an ABORT, never
// the receiver's confirmation; the attempt counts against the code.
TEST(Session, FakeSenderGetsNoConfirmationForAWrongGuess) {
  Host alice("alice"), bob("bob");
  const PairingCode code = new_code();
  OneTimeCode keeper(code);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd cfd(sv[0]), sfd(sv[1]);
  std::optional<Result<Session>> server;
  std::thread receiver([&] {
    SessionOptions o{Role::server, nullptr, 5'000, &keeper};
    server.emplace(Session::establish(sfd.get(), *bob.tls, *bob.identity, *bob.known, o));
    if (!*server) ::shutdown(sfd.get(), SHUT_RDWR);
  });
  HandPlayedPeer fake(alice, cfd.get(), /*as_server=*/false);
  ASSERT_TRUE(fake.ok());
  fake.send_hello();
  ASSERT_TRUE(fake.receive());
  ASSERT_TRUE(fake.receive());
  EXPECT_EQ(fake.types(), (std::vector<std::uint8_t>{kHello, kShare}));
  EXPECT_TRUE(fake.silent_for(200));  // and then nothing until we answer

  auto pake = Spake2::start(Spake2::Side::b, pairing_context(bob, alice, fake.exporter()), password_of(new_code()));
  ASSERT_TRUE(pake);
  auto keys = pake.value().finish(fake.payload(1));
  ASSERT_TRUE(keys);
  fake.send(kShare, pake.value().share());
  fake.send(kConfirm, keys.value().confirmation);
  ASSERT_TRUE(fake.receive());
  EXPECT_EQ(fake.types(), (std::vector<std::uint8_t>{kHello, kShare, kAbort}));
  receiver.join();
  ASSERT_FALSE(*server);
  EXPECT_EQ(server->error().code, Errc::pairing_failed);
  EXPECT_EQ(keeper.failures(), 1u);
  EXPECT_FALSE(pinned(bob, alice));
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
