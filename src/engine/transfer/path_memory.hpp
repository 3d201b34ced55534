// What each path to a known peer carried last time, so that a UDP lane's
// controller can start from it (transport::StartHint) instead of from ten
// packets: issue "Latency"'s fast start. One small JSON file in the config
// directory (path-figures.json), bounded, read once per session and written
// after a verified transfer. Losing it costs only a slower start.
// It also keeps the protocol each peer spoke last time: a sender may make its
// first offer in TLS's last flight, before the receiver's addresses say what
// it speaks, only when it knows what to expect.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/transport/congestion_controller.hpp"
#include "core/wire/protocol_needs.hpp"

namespace braid::transfer {

class PathMemory {
 public:
  /// Figures older than this are not used (a laptop moves; a path changes).
  static constexpr int64_t kMaxAgeSeconds = 24 * 3600;
  /// Bounds on what the file holds: the least recently used go first.
  static constexpr size_t kMaxPeers = 64;
  static constexpr size_t kMaxPathsPerPeer = 16;

  /// The figures in `dir` (none if the file is missing, unreadable or
  /// malformed: it is only a hint).
  static PathMemory load(const std::filesystem::path& dir);
  /// From the file's text (tests; load() reads the file and calls this).
  static PathMemory parse(const std::string& text);

  /// The path's last figures for `peer` (a key fingerprint), if recent.
  std::optional<transport::StartHint> hint(const std::string& peer, const std::string& path, int64_t now_unix) const;
  void remember(const std::string& peer, const std::string& path, transport::StartHint figures, int64_t now_unix);

  /// The protocol `peer` spoke when last met (any age: a peer that changed
  /// its braid since is found out from its addresses, Sender::handle_peer_protocol).
  std::optional<wire::PeerProtocol> protocol(const std::string& peer) const;
  /// Records what `peer` speaks. False when that is what was already known
  /// and recently (nothing to save); true when it changed or was old news.
  bool remember_protocol(const std::string& peer, const wire::PeerProtocol& spoken, int64_t now_unix);

  std::string to_text() const;
  /// Writes the file (atomically, private). Empty on success, else why not.
  std::string save(const std::filesystem::path& dir) const;

  /// The key of a UDP path: the interface (or local address) it leaves by
  /// and the peer's address, without ports (they change between runs).
  static std::string udp_path_key(const std::string& local, const std::string& remote_host);
  /// The same for a TCP lane's path. Its figures are the scheduler's only
  /// (LaneTraits::rate_hint): the kernel starts every connection from its
  /// own ten segments, but a lane need not idle behind a probe piece then.
  static std::string tcp_path_key(const std::string& local, const std::string& remote_host);

 private:
  struct Figures {
    double rate_bytes_per_sec = 0;
    int64_t rtt_us = 0;
    int64_t at = 0;  // unix seconds
  };
  std::map<std::string, std::map<std::string, Figures>> peers_;
  struct Spoken {
    wire::PeerProtocol protocol;
    int64_t at = 0;  // unix seconds
  };
  std::map<std::string, Spoken> protocols_;  // by peer, at most kMaxPeers
};

}  // namespace braid::transfer
