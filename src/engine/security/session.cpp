#include "session.h"

#include <openssl/err.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <ctime>
#include <optional>
#include <string_view>
#include <vector>

#include "files.h"
#include "kdf.h"
#include "spake2.h"

namespace braid::security {
namespace {

constexpr std::string_view kLabelSessionId = "EXPORTER-braid session id v1";
constexpr std::string_view kLabelLaneSecret = "EXPORTER-braid lane secret v1";
constexpr std::string_view kLabelPairing = "EXPORTER-braid pairing v2";
constexpr std::string_view kPairingProtocol = "braid pairing v2";  // SPAKE2's AAD starts with it
constexpr std::size_t kChannelBindingSize = 32;                      // the exporter value in the AAD
// v1 proved the code with an HMAC (sender first); v2 runs SPAKE2. A v1 peer
// sees another version in HELLO and both sides refuse with protocol_error.
constexpr std::uint8_t kAuthVersion = 2;

// Messages of the peer check, inside TLS: type, payload length, payload.
enum class Msg : std::uint8_t { hello = 1, share = 2, confirm = 3, abort = 4, done = 5 };
// HELLO's verdict byte: what the sender thinks of the receiver's key.
enum class WireVerdict : std::uint8_t { pinned = 0, unknown = 1, changed = 2 };
// ABORT's payload: why the sender of the ABORT gave up.
enum class AbortReason : std::uint8_t {
  wrong_code = 1,     // the peer's confirmation did not verify
  code_not_live = 2,  // the receiver's code was spent or retired meanwhile
  broken = 3,         // a message that was not what the exchange needs
};

WireVerdict to_wire(KnownPeers::Verdict v) {
  switch (v) {
    case KnownPeers::Verdict::pinned: return WireVerdict::pinned;
    case KnownPeers::Verdict::unknown: return WireVerdict::unknown;
    case KnownPeers::Verdict::changed: return WireVerdict::changed;
  }
  return WireVerdict::changed;
}

int accept_any_certificate(int, X509_STORE_CTX*) {
  // Self-signed certificates have no chain to check. Trust is decided after
  // the handshake by the key's fingerprint (known peers or pairing code);
  // the handshake itself still proves the peer holds the certificate's key.
  return 1;
}

}  // namespace

Result<TlsContext> TlsContext::create(const Identity& identity) {
  TlsContext t;
  t.ctx_.reset(SSL_CTX_new(TLS_method()));
  SSL_CTX* c = t.ctx_.get();
  bool ok = c != nullptr && SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) == 1 &&
            SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION) == 1 &&
            SSL_CTX_use_certificate(c, identity.certificate()) == 1 &&
            SSL_CTX_use_PrivateKey(c, identity.key()) == 1 && SSL_CTX_check_private_key(c) == 1 &&
            SSL_CTX_set_num_tickets(c, 0) == 1;
  if (!ok) return ossl::crypto_error("cannot set up TLS 1.3 with this host's identity");
  SSL_CTX_set_options(c, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any_certificate);
  return t;
}

// Runs one establish(); keeps the per-step state out of Session.
class SessionEstablisher {
 public:
  SessionEstablisher(Session& s, const Identity& id, KnownPeers& kp, const SessionOptions& o)
      : s_(s), id_(id), known_(kp), opt_(o) {}

  Status run(int fd, const TlsContext& tls) {
    if (Status st = handshake(fd, tls); !st) return st;
    if (Status st = inspect_peer(); !st) return st;
    if (Status st = derive_session_values(); !st) return st;
    return check_peer();
  }

 private:
  Status handshake(int fd, const TlsContext& tls) {
    s_.bio_state_ = std::make_unique<FdBioState>();
    s_.bio_state_->fd = fd;
    s_.bio_state_->timeout_ms = opt_.io_timeout_ms;
    s_.ssl_.reset(SSL_new(tls.get()));
    BIO* bio = s_.ssl_ ? make_fd_bio(s_.bio_state_.get()) : nullptr;
    if (bio == nullptr) return ossl::crypto_error("cannot create a TLS connection");
    SSL_set_bio(s_.ssl_.get(), bio, bio);  // the SSL owns the BIO now
    int rc = opt_.role == Role::client ? SSL_connect(s_.ssl_.get()) : SSL_accept(s_.ssl_.get());
    if (rc != 1) {
      if (auto other = not_tls(*s_.bio_state_)) {
        ERR_clear_error();
        return make_error(Errc::not_braid, *other);
      }
      return s_.io_failure("the TLS 1.3 handshake", rc);
    }
    return {};
  }

  // What answered, if its first bytes are not a TLS record (a handshake or
  // an alert, version 3.x): "it answered like HTTP". Nothing if they are,
  // or if nothing came.
  static std::optional<std::string> not_tls(const FdBioState& st) {
    const std::string_view got(reinterpret_cast<const char*>(st.first), st.first_len);
    if (got.empty()) return std::nullopt;
    if ((got[0] == 0x16 || got[0] == 0x15) && (got.size() < 2 || got[1] == 0x03)) return std::nullopt;
    const auto starts = [&](std::string_view p) { return got.substr(0, p.size()) == p; };
    if (starts("HTTP/")) return "it answered like HTTP";
    if (starts("SSH-")) return "it answered like SSH";
    if (starts("220")) return "it answered like FTP or SMTP";
    if (starts("+OK") || starts("* OK")) return "it answered like POP3 or IMAP";
    std::string line;
    for (char c : got) {
      if (c == '\r' || c == '\n') break;
      if (c < 0x20 || c > 0x7e) {
        line.clear();
        break;
      }
      line += c;
    }
    if (!line.empty()) return "it answered '" + line + "...', not TLS";
    static const char kHex[] = "0123456789abcdef";
    std::string hex;
    for (size_t i = 0; i < std::min<size_t>(got.size(), 4); ++i)
      hex += std::string(i ? " " : "") + kHex[static_cast<unsigned char>(got[i]) >> 4] + kHex[got[i] & 0xf];
    return "it answered with bytes that are not TLS: " + hex + " ...";
  }

  Status inspect_peer() {
    X509* cert = SSL_get0_peer_certificate(s_.ssl_.get());
    if (cert == nullptr) return make_error(Errc::bad_peer_certificate, "the peer presented no certificate");
    EVP_PKEY* key = X509_get0_pubkey(cert);
    if (key == nullptr || EVP_PKEY_get_id(key) != EVP_PKEY_ED25519)
      return opt_.role == Role::client
                 ? make_error(Errc::not_braid, "it answered like a TLS server, but its key is not an Ed25519 key")
                 : make_error(Errc::bad_peer_certificate, "the peer's key is not an Ed25519 key; it is not a braid host");
    auto name = certificate_peer_name(cert);
    if (!name) return name.error();
    auto fp = Fingerprint::of_key(key);
    if (!fp) return fp.error();
    s_.peer_.name = name.value();
    s_.peer_.host = name.value();
    s_.peer_.fingerprint = fp.value();
    return {};
  }

  Status derive_session_values() {
    std::array<std::uint8_t, 8> id{};
    if (Status st = s_.export_keying_material(kLabelSessionId, {}, id); !st) return st;
    for (std::uint8_t b : id) s_.session_id_ = (s_.session_id_ << 8) | b;
    return s_.export_keying_material(kLabelLaneSecret, {}, s_.lane_secret_.span());
  }

  Status check_peer() {
    KnownPeers::Check mine = known_.check(s_.peer_.fingerprint);
    if (opt_.role == Role::client && !opt_.addressed_label.empty()) {
      KnownPeers::Check by_label = known_.check_label(opt_.addressed_label, s_.peer_.fingerprint);
      if (by_label.verdict != KnownPeers::Verdict::unknown) mine = by_label;
    }
    bool have_code = opt_.pairing_code != nullptr || (opt_.role == Role::server && opt_.code_keeper != nullptr);
    std::uint8_t hello[] = {kAuthVersion, static_cast<std::uint8_t>(to_wire(mine.verdict)), have_code ? std::uint8_t{1} : std::uint8_t{0}};
    // Both sides always send and then read a HELLO before deciding anything,
    // even when they already know they will refuse: each learns why the
    // other refuses, and nobody closes with unread data (which on TCP turns
    // into a reset that could swallow the explanation).
    Status sent = send_msg(Msg::hello, hello);
    if (sent && opt_.role == Role::client && opt_.early_frames && mine.verdict == KnownPeers::Verdict::pinned &&
        !have_code)
      sent = opt_.early_frames(s_);
    auto reply = sent ? expect(Msg::hello, 3) : Result<std::vector<std::uint8_t>>(sent.error());
    if (mine.verdict == KnownPeers::Verdict::changed)
      return make_error(Errc::peer_key_changed, key_changed_message(*mine.entry, s_.peer_.fingerprint, known_.file()));
    if (!reply) return reply.error();
    const std::vector<std::uint8_t>& h = reply.value();
    if (h[0] != kAuthVersion || h[1] > 2 || h[2] > 1)
      return make_error(Errc::protocol_error, "the peer '" + s_.peer_.name + "' speaks another version of braid's peer check");
    auto theirs = static_cast<WireVerdict>(h[1]);
    bool they_have_code = h[2] == 1;
    if (theirs == WireVerdict::changed)
      return make_error(Errc::peer_refused_us,
                        "the peer '" + s_.peer_.name + "' refused this host: it has a different key pinned for us. "
                        "Our key is " + id_.fingerprint().to_string() + ". If this host's identity was recreated on purpose, "
                        "run `braid peers forget` for our old entry on '" + s_.peer_.name + "' (or delete its line from the known_peers file there), then pair again with a code.");

    if (mine.verdict == KnownPeers::Verdict::pinned) s_.peer_.name = mine.entry->label;
    bool need_pairing = mine.verdict == KnownPeers::Verdict::unknown || theirs == WireVerdict::unknown;
    if (!need_pairing) {
      s_.peer_.how = PeerAuth::pinned;
      return {};
    }
    if (!have_code) {
      if (mine.verdict == KnownPeers::Verdict::unknown)
        return make_error(Errc::pairing_required,
                          "the peer '" + s_.peer_.name + "' (" + s_.peer_.fingerprint.to_string() + ") is not in " +
                              known_.file().string() + "; a first session needs the pairing code the receiver printed (--code)");
      return make_error(Errc::pairing_required,
                        "the peer '" + s_.peer_.name + "' does not know this host (our key " + id_.fingerprint().to_string() +
                            " is not in its known peers; perhaps its file was reset); pair again with a code (--code)");
    }
    if (!they_have_code)
      return make_error(Errc::pairing_required, "a pairing code is needed, but the peer '" + s_.peer_.name +
                                                    "' was started without one (give it the same --code)");
    return pair(mine.verdict == KnownPeers::Verdict::unknown);
  }

  // SPAKE2 (spake2.h) with the receiver as A and the sender as B. Order:
  //   server: SHARE pA  →
  //   client:           ← (only now) SHARE pB, CONFIRM cB
  //   server: check cB, settle the attempt with the code keeper, then
  //           CONFIRM cA → (or ABORT: nothing that depends on the check)
  //   client: check cA, pin the server, DONE →
  //   server: pin the client.
  // Nothing that depends on the code, other than a share (uniform whatever
  // the code is), leaves either side before it has the peer's share.
  Status pair(bool pin_peer) {
    std::optional<CodeKeeper::Lease> lease;
    const PairingCode* code = opt_.pairing_code;
    if (opt_.role == Role::server && opt_.code_keeper != nullptr) {
      auto l = opt_.code_keeper->lease();
      if (!l) {
        abort_pairing(AbortReason::code_not_live);
        return l.error();
      }
      lease.emplace(std::move(l.value()));
      code = &lease->code;
    }
    auto w = spake2_password(as_bytes(code->canonical()));
    if (!w) return w.error();
    std::array<std::uint8_t, kChannelBindingSize> binding{};
    if (Status st = s_.export_keying_material(kLabelPairing, {}, binding); !st) return st;
    const Fingerprint& client = opt_.role == Role::client ? id_.fingerprint() : s_.peer_.fingerprint;
    const Fingerprint& server = opt_.role == Role::client ? s_.peer_.fingerprint : id_.fingerprint();
    // Identities: the keys that get pinned. AAD: the protocol and this TLS
    // channel (a man in the middle has two channels, two exporter values).
    Spake2Context context{{server.bytes().begin(), server.bytes().end()},
                          {client.bytes().begin(), client.bytes().end()},
                          {kPairingProtocol.begin(), kPairingProtocol.end()}};
    context.aad.insert(context.aad.end(), binding.begin(), binding.end());
    auto pake = Spake2::start(opt_.role == Role::server ? Spake2::Side::a : Spake2::Side::b, std::move(context), w.value());
    if (!pake) return pake.error();

    Status paired = opt_.role == Role::server ? pair_as_server(pake.value(), lease) : pair_as_client(pake.value());
    if (!paired) return paired;
    if (opt_.role == Role::client) {
      if (pin_peer)
        if (Status st = pin(); !st) return st;
      if (Status st = send_msg(Msg::done, {}); !st) return st;
    } else {
      auto done = expect(Msg::done, 0);
      if (!done) return done.error();
      if (pin_peer)
        if (Status st = pin(); !st) return st;
    }
    s_.peer_.how = PeerAuth::paired;
    return {};
  }

  // Pins the peer just paired (by key; the label is --name or the name it
  // claims, made unique) and calls it by that label from now on.
  Status pin() {
    auto pinned = known_.pin(s_.peer_.fingerprint, s_.peer_.host, opt_.pin_label, utc_now());
    if (!pinned) return pinned.error();
    s_.peer_.name = pinned.value().label;
    return {};
  }

  static std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    char buf[32] = {};
    if (::gmtime_r(&t, &tm) == nullptr || std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) return {};
    return buf;
  }

  Status pair_as_server(Spake2& pake, const std::optional<CodeKeeper::Lease>& lease) {
    if (Status st = send_msg(Msg::share, pake.share()); !st) return st;
    auto share = expect(Msg::share, kSpake2ShareSize);
    if (!share) return share.error();
    auto mac = expect(Msg::confirm, kSpake2MacSize);
    if (!mac) return mac.error();
    auto keys = pake.finish(share.value());
    if (!keys && keys.error().code != Errc::pairing_failed) {  // not a point: says nothing about the code
      abort_pairing(AbortReason::broken);
      return keys.error().code == Errc::protocol_error ? broke_exchange() : keys.error();
    }
    const bool right = keys && keys.value().verify_peer(mac.value());
    // Settled before anything that depends on `right` goes back.
    const CodeLedger::Verdict verdict =
        opt_.code_keeper && lease ? opt_.code_keeper->settle(lease->generation, right)
                                  : (right ? CodeLedger::Verdict::accepted : CodeLedger::Verdict::wrong_code);
    if (verdict == CodeLedger::Verdict::stale) {
      abort_pairing(AbortReason::code_not_live);
      return make_error(Errc::pairing_failed, "pairing failed: the peer '" + s_.peer_.name + "' (" +
                                                  s_.peer_.fingerprint.to_string() +
                                                  ") used a pairing code that is spent or retired; nothing is accepted from it");
    }
    if (verdict != CodeLedger::Verdict::accepted) {
      abort_pairing(AbortReason::wrong_code);
      return make_error(Errc::pairing_failed, "pairing failed: the peer '" + s_.peer_.name + "' (" +
                                                  s_.peer_.fingerprint.to_string() +
                                                  ") gave a wrong pairing code; nothing is accepted from it");
    }
    return send_msg(Msg::confirm, keys.value().confirmation);
  }

  Status pair_as_client(Spake2& pake) {
    // The receiver's share first: until it is here we send nothing at all.
    auto share = expect(Msg::share, kSpake2ShareSize);
    if (!share) return share.error();
    auto keys = pake.finish(share.value());
    if (!keys) {
      abort_pairing(keys.error().code == Errc::pairing_failed ? AbortReason::wrong_code : AbortReason::broken);
      return keys.error().code == Errc::protocol_error ? broke_exchange() : keys.error();
    }
    std::vector<std::uint8_t> flight = encode(Msg::share, pake.share());  // one TLS record for both
    std::vector<std::uint8_t> confirm = encode(Msg::confirm, keys.value().confirmation);
    flight.insert(flight.end(), confirm.begin(), confirm.end());
    if (Status st = s_.send(flight); !st) return st;
    auto mac = expect(Msg::confirm, kSpake2MacSize);
    if (!mac) return mac.error();
    if (keys.value().verify_peer(mac.value())) return {};
    abort_pairing(AbortReason::wrong_code);
    return make_error(Errc::pairing_failed, "pairing failed: the peer '" + s_.peer_.name +
                                                "' does not know our pairing code; check the code (or someone is "
                                                "impersonating the receiver)");
  }

  struct Message {
    Msg type;
    std::vector<std::uint8_t> payload;
  };

  // Best effort: we fail either way, and the peer learns why.
  void abort_pairing(AbortReason why) {
    std::uint8_t reason[] = {static_cast<std::uint8_t>(why)};
    (void)send_msg(Msg::abort, reason);
  }

  Error broke_exchange() const {
    return make_error(Errc::protocol_error, "the peer '" + s_.peer_.name + "' broke braid's pairing exchange");
  }

  // The peer's ABORT, as our error.
  Error aborted(const Message& m) const {
    const auto why = m.payload.size() == 1 ? static_cast<AbortReason>(m.payload[0]) : AbortReason::broken;
    if (opt_.role == Role::server && why == AbortReason::broken)
      return make_error(Errc::pairing_failed, "pairing failed: the peer '" + s_.peer_.name +
                                                  "' could not follow our pairing messages; nothing is accepted from it");
    if (opt_.role == Role::server)
      return make_error(Errc::pairing_failed, "pairing failed: the peer '" + s_.peer_.name +
                                                  "' rejected our pairing code; nothing is accepted from it");
    if (why == AbortReason::code_not_live)
      return make_error(Errc::pairing_failed,
                        "pairing failed: the receiver '" + s_.peer_.name +
                            "' no longer takes this pairing code (it was used to pair another host, or " +
                            std::to_string(CodeLedger::kMaxFailures) +
                            " wrong attempts retired it); use the code the receiver shows now");
    if (why == AbortReason::broken)
      return make_error(Errc::pairing_failed, "pairing failed: the receiver '" + s_.peer_.name +
                                                  "' could not follow our pairing messages");
    return make_error(Errc::pairing_failed,
                      "pairing failed: the receiver '" + s_.peer_.name +
                          "' rejected our pairing code; check the code it shows now and try again (a code pairs "
                          "one host, and " + std::to_string(CodeLedger::kMaxFailures) + " wrong attempts replace it)");
  }

  static std::vector<std::uint8_t> encode(Msg type, std::span<const std::uint8_t> payload) {
    std::vector<std::uint8_t> buf{static_cast<std::uint8_t>(type), static_cast<std::uint8_t>(payload.size())};
    buf.insert(buf.end(), payload.begin(), payload.end());
    return buf;
  }

  Status send_msg(Msg type, std::span<const std::uint8_t> payload) { return s_.send(encode(type, payload)); }

  Result<Message> receive_msg() {
    std::array<std::uint8_t, 2> head{};
    if (Status st = s_.receive(head); !st) return st.error();
    if (head[0] < 1 || head[0] > static_cast<std::uint8_t>(Msg::done))
      return make_error(Errc::protocol_error, "the peer '" + s_.peer_.name + "' sent an unknown message during the peer check");
    Message m{static_cast<Msg>(head[0]), std::vector<std::uint8_t>(head[1])};
    if (Status st = s_.receive(m.payload); !st) return st.error();
    return m;
  }

  Result<std::vector<std::uint8_t>> expect(Msg type, std::size_t size) {
    auto m = receive_msg();
    if (!m) return m.error();
    if (m.value().type == Msg::abort) return aborted(m.value());
    if (m.value().type != type || m.value().payload.size() != size) {
      if (type != Msg::hello) abort_pairing(AbortReason::broken);
      return make_error(Errc::protocol_error, "the peer '" + s_.peer_.name + "' broke braid's peer check");
    }
    return std::move(m.value().payload);
  }

  Session& s_;
  const Identity& id_;
  KnownPeers& known_;
  const SessionOptions& opt_;
};

Result<Session> Session::establish(int fd, const TlsContext& tls, const Identity& identity, KnownPeers& known_peers,
                                   const SessionOptions& options) {
  ERR_clear_error();
  Session s;
  s.role_ = options.role;
  SessionEstablisher e(s, identity, known_peers, options);
  if (Status st = e.run(fd, tls); !st) {
    s.shutdown();
    return st.error();
  }
  return s;
}

Session::~Session() {
  // The lane secret wipes itself; the SSL object wipes its own secrets.
}

Status Session::export_keying_material(std::string_view label, std::span<const std::uint8_t> context,
                                       std::span<std::uint8_t> out) const {
  if (SSL_export_keying_material(ssl_.get(), out.data(), out.size(), label.data(), label.size(), context.data(),
                                 context.size(), 1) != 1)
    return ossl::crypto_error("the TLS exporter failed");
  return {};
}

Status Session::send(std::span<const std::uint8_t> data) {
  while (!data.empty()) {
    std::size_t n = 0;
    int rc = SSL_write_ex(ssl_.get(), data.data(), data.size(), &n);
    if (rc != 1) return io_failure("sending", rc);
    data = data.subspan(n);
  }
  return {};
}

Status Session::receive(std::span<std::uint8_t> out) {
  while (!out.empty()) {
    std::size_t n = 0;
    int rc = SSL_read_ex(ssl_.get(), out.data(), out.size(), &n);
    if (rc != 1) return io_failure("receiving", rc);
    out = out.subspan(n);
  }
  return {};
}

void Session::shutdown() {
  if (shut_down_ || !ssl_) return;
  shut_down_ = true;
  // Only after a completed handshake; a failed one has nothing to close.
  if (SSL_is_init_finished(ssl_.get())) (void)SSL_shutdown(ssl_.get());
  ERR_clear_error();
}

Error Session::io_failure(std::string_view during, int ssl_ret) {
  int err = SSL_get_error(ssl_.get(), ssl_ret);
  std::string queue = ossl::drain_errors();
  std::string peer = peer_.name.empty() ? "the peer" : "the peer '" + peer_.name + "'";
  if (bio_state_ && bio_state_->timed_out)
    return make_error(Errc::timed_out, std::string(during) + " timed out: " + peer + " did not answer within " +
                                           std::to_string(bio_state_->timeout_ms) + " ms");
  // A reset during the handshake is a close too: a peer that closes without
  // reading our ClientHello makes the kernel answer it with a reset.
  const bool reset_in_handshake = ssl_ && !SSL_is_init_finished(ssl_.get()) && bio_state_ &&
                                  (bio_state_->last_errno == ECONNRESET || bio_state_->last_errno == EPIPE);
  if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && bio_state_ && bio_state_->last_errno == 0) ||
      (err == SSL_ERROR_SYSCALL && reset_in_handshake))
    return make_error(Errc::connection_closed, peer + " closed the connection during " + std::string(during));
  if (err == SSL_ERROR_SYSCALL && bio_state_ && bio_state_->last_errno != 0)
    return make_error(Errc::io_error, std::string(during) + " failed: " + errno_text(bio_state_->last_errno));
  bool in_handshake = ssl_ && !SSL_is_init_finished(ssl_.get());
  return make_error(in_handshake ? Errc::handshake_failed : Errc::protocol_error,
                    std::string(during) + " failed" + (queue.empty() ? std::string() : " (OpenSSL: " + queue + ")"));
}

}  // namespace braid::security
