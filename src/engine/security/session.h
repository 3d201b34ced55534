// A braid session's secure start: TLS 1.3 with both hosts' self-signed
// identity certificates over a socket the engine owns, then braid's own
// peer check (pinned key, or a pairing code proven over this very channel).
//
// Who does what:
//   - the engine connects/accepts the TCP socket, and calls
//     Session::establish on its own thread (it blocks, with a timeout);
//   - after it succeeds, the engine may use send/receive for control
//     messages over TLS, and derives every lane's keys from lane_secret()
//     and session_id() (lane_keys.h, frame_crypto.h);
//   - the engine closes the socket after the Session is gone.
//
// The peer check, after the TLS handshake (each side, with its own
// known-peers file, which pins keys: known_peers.h):
//   1. both send HELLO: their verdict on the other's key (pinned, unknown,
//      changed) and whether they hold a pairing code. "changed" only when
//      the client addressed the peer by a label that pins another key;
//   2. a changed key on either side ends the session with a loud message
//      (a pairing code never overrides a pin);
//   3. if both verdicts are "pinned", done: no code needed;
//   4. otherwise both must hold the code and run SPAKE2 (spake2.h) bound to
//      this TLS channel and both keys: the server sends its share; the
//      client, only once it has that, sends its share and confirmation; the
//      server checks it, settles the attempt with its code keeper (a
//      one-time code, code_keeper.h) and only then confirms; the client
//      checks that, pins the server and says DONE; the server pins the
//      client. A wrong code fails on both sides before any file data, and
//      nothing is pinned unless both confirmations verified.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "code_keeper.h"
#include "fd_bio.h"
#include "fingerprint.h"
#include "identity.h"
#include "known_peers.h"
#include "lane_keys.h"
#include "ossl.h"
#include "pairing_code.h"
#include "result.h"

namespace braid::security {

// The OpenSSL side of an identity: TLS 1.3 only, both sides present a
// certificate, any certificate passes the handshake (braid checks the key
// afterwards), no session tickets or resumption (every session proves its
// keys afresh). One per process is enough; usable for both roles and by
// many threads at once.
class TlsContext {
 public:
  static Result<TlsContext> create(const Identity& identity);
  SSL_CTX* get() const { return ctx_.get(); }

 private:
  ossl::SslCtx ctx_;
};

class Session;

enum class PeerAuth : std::uint8_t {
  pinned,  // its key was in our known-peers file
  paired,  // a pairing code was proven in this session (and it is now pinned)
};

struct PeerInfo {
  std::string name;  // its label in our known peers (pinned or just paired); else the name it claims
  std::string host;  // the name it claims (its certificate's), whatever we call it
  Fingerprint fingerprint;
  PeerAuth how = PeerAuth::pinned;
};

struct SessionOptions {
  Role role = Role::client;
  // The pairing code, if the user gave one (sender: --code; receiver: the
  // code it printed). Needed only when either side does not know the other.
  const PairingCode* pairing_code = nullptr;
  // Longest wait for the peer on any single read or write during establish
  // and in send/receive. -1 waits forever.
  int io_timeout_ms = 30'000;
  // Server only: the receiver's one-time code. When set, pairing leases the
  // keeper's live code (pairing_code is ignored) and settles every attempt
  // with it before answering the peer. Must outlive establish().
  CodeKeeper* code_keeper = nullptr;
  // Client only: the known-peers label the user addressed this peer by
  // (`braid send FILE vm`). If that label pins another key than the one the
  // peer presents, establish fails with Errc::peer_key_changed and the loud
  // message, whatever code is given. Empty, or a label not in the file: the
  // peer is checked by its key alone.
  std::string addressed_label{};
  // The label to pin a newly paired peer under (`--name`); empty: the name
  // it claims, made unique (KnownPeers::pin).
  std::string pin_label{};
  // Client only: the engine's first frames in TLS's last flight. Called once
  // the TLS handshake is done, this host has the server's key pinned (TLS
  // proved the server holds it), no pairing code is held (so no pairing can
  // follow on this channel) and our HELLO has gone — before the server's
  // HELLO is read. What it writes on the fd follows our HELLO (session_id()
  // and lane_secret() are set), so the server has it with our Finished,
  // a round trip sooner. Nothing weakens: those frames are sealed with keys
  // only this TLS session's two ends hold, the server reads them only after
  // it has checked our key (before that, or if it refuses us, it never reads
  // them), and we read nothing of the server's past its HELLO before that
  // HELLO is checked. An error it returns ends establish().
  std::function<Result<void>(const Session&)> early_frames{};
};

class Session {
 public:
  // Runs the TLS handshake and the peer check over `fd` (a connected stream
  // socket, blocking or not). `fd` stays owned by the caller and must stay
  // open while the Session lives. On success the peer is authenticated and,
  // if pairing happened, pinned in `known_peers`.
  static Result<Session> establish(int fd, const TlsContext& tls, const Identity& identity, KnownPeers& known_peers,
                                   const SessionOptions& options);

  Session(Session&&) noexcept = default;
  Session& operator=(Session&&) noexcept = default;
  ~Session();

  Role role() const { return role_; }
  const PeerInfo& peer() const { return peer_; }

  // 64-bit id of this session, equal on both ends, different for every
  // session (a TLS exporter value): goes into every frame header.
  std::uint64_t session_id() const { return session_id_; }
  // 32-byte secret for derive_lane_keys (a TLS exporter value).
  const LaneSecret& lane_secret() const { return lane_secret_; }

  // RFC 8446 §7.5 exporter, for keys the engine wants beyond lane keys.
  // Labels should start with "EXPORTER-braid ".
  Status export_keying_material(std::string_view label, std::span<const std::uint8_t> context,
                                std::span<std::uint8_t> out) const;

  // Control messages over the TLS channel. send writes all bytes; receive
  // fills `out` exactly (Errc::connection_closed if the peer closes first).
  Status send(std::span<const std::uint8_t> data);
  Status receive(std::span<std::uint8_t> out);

  // Sends TLS close_notify (does not close the fd). Idempotent.
  void shutdown();

 private:
  Session() = default;
  Error io_failure(std::string_view during, int ssl_ret);

  Role role_ = Role::client;
  std::unique_ptr<FdBioState> bio_state_;  // stable address: the BIO points at it
  ossl::Ssl ssl_;
  PeerInfo peer_;
  std::uint64_t session_id_ = 0;
  LaneSecret lane_secret_;
  bool shut_down_ = false;

  friend class SessionEstablisher;
};

}  // namespace braid::security
