#include "engine/transfer/sender_session.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstring>

#include "core/policy_registry.hpp"
#include "core/transport/tcp_pacing_cap.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/security/frame_format.h"
#include "engine/transfer/code_text.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/lane_lookup.hpp"
#include "engine/transfer/progress_line.hpp"
#include "engine/transfer/resume_check.hpp"
#include "engine/udp/udp_send_lane.hpp"

namespace braid::transfer {

using security::kFrameHeaderSize;
using security::kFrameTagSize;

struct SenderSession::Lane {
  uint32_t id = 0;
  std::unique_ptr<lanes::LaneLink> link;      // TCP lanes
  std::unique_ptr<udp::UdpSendLane> udp;      // UDP lanes
  std::unique_ptr<UdpEvents> udp_events;
  std::string name, local, remote;
  bool alive = true;
  /// Carries pieces. Lane 0 does not while UDP lanes do: it carries the UDP
  /// lanes' piece headers and acks, which must not queue behind data.
  bool data = true;
  bool udp_kind = false;  // fixed at creation (udp is released at the session's end)
  bool is_udp() const { return udp_kind; }
  // UDP lanes, under mu_: pieces handed to the lane (for Cancel), bytes handed (the kill test hook).
  std::map<core::PieceId, uint64_t> udp_handed;  // piece -> lane piece id
  uint64_t udp_bytes = 0;
  uint64_t udp_acked_seen = 0;  // the transport's acked data bytes at the last report
  uint64_t kill_after = UINT64_MAX;
  std::string close_reason;
  // UDP lanes: the path a TCP lane takes instead if UDP never gets through.
  struct TcpFallback {
    std::optional<lanes::Endpoint> local;
    lanes::Endpoint remote;
    std::optional<Rate> per_lane;
  };
  std::optional<TcpFallback> tcp_fallback;
  // TCP lanes under --background: the pacing thread's controller, and what
  // it last saw and set (published under mu_ for the log).
  std::unique_ptr<transport::TcpPacingCap> tcp_cap;  // the pacing thread's alone
  std::optional<Rate> tcp_cap_on_socket;              // the pacing thread's alone
  struct TcpPacing {
    bool active = false;
    double cap = -1;  // bytes/s on the socket, -1: none
    double queue_ms = 0, srtt_ms = 0, min_rtt_ms = 0;
    uint64_t acked = 0, kernel_pacing = 0, delivery_rate = 0;
    uint32_t retrans = 0, cwnd = 0, restarts = 0;
  } tcp_pacing;
  // Per transfer, under mu_:
  std::optional<core::LaneId> sched;
  std::deque<core::Assign> queue;
  std::optional<core::PieceId> sending;
  std::atomic<bool> cancel_current{false};
  uint64_t wire_at_start = 0;
  uint64_t rejected_at_start = 0;
  Time first_send = Time::never();
  std::thread reader, writer;
};

// One transfer in progress.
struct SenderSession::Active {
  Active(uint32_t id_, const files::SourceTree& tree, core::Scheduler s, wire::HashAlgo h)
      : id(id_),
        layout(tree.entries),
        fds(512,
            [&tree](size_t entry, std::string& error) {
              int fd = ::open(tree.local_paths[entry].c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
              if (fd < 0) error = "cannot open '" + tree.local_paths[entry] + "': " + std::strerror(errno);
              return security::UniqueFd(fd);
            }),
        sched(std::move(s)),
        hash(h) {}

  uint32_t id;
  files::FileLayout layout;
  files::FdCache fds;
  core::Scheduler sched;
  wire::HashAlgo hash;
  std::vector<std::optional<wire::Digest>> piece_hash;  // by piece id
  std::vector<size_t> sched_to_lane;                    // scheduler lane id -> lanes_ index
  Time start;
  int fatal_code = 0;
  std::string fatal;
  int next_decile = 1;
  Time next_sample;
  // UDP pieces' headers and `done` share one TCP lane, so `done` can never
  // overtake a header; if that lane dies, every header goes again on the next.
  Lane* ordered_lane = nullptr;
  std::vector<wire::UdpPiece> udp_headers;
  std::unique_ptr<ProgressLine> progress;
  // Resume: bytes the receiver held and the source confirmed (not sent), and
  // bytes it held that no longer matched (sent again).
  uint64_t resumed_bytes = 0;
  uint64_t resume_rejected_bytes = 0;
  // BRAID_TEST_CRASH_AFTER: die like a crash once this many bytes of this run were acked.
  uint64_t crash_after = UINT64_MAX;
};

// The UDP lane's events, forwarded to the session (on the lane's I/O thread).
class SenderSession::UdpEvents : public udp::UdpSendEvents {
 public:
  UdpEvents(SenderSession& s, Lane& lane) : s_(s), lane_(lane) {}
  void on_piece_started(uint64_t piece) override { s_.on_udp_started(lane_, piece); }
  void on_piece_acked(uint64_t piece) override { s_.on_udp_acked(lane_, piece); }
  void on_closed(const std::string& reason) override {
    s_.close_lane(lane_, reason, true);
    s_.fall_back_to_tcp(lane_);
  }

 private:
  SenderSession& s_;
  Lane& lane_;
};

struct SenderSession::LanePath {
  std::optional<lanes::Endpoint> local;
  lanes::Endpoint remote;
  bool udp = false;
};

namespace {

const std::string kPeerClosedPrefix = "closed by the receiver: ";

// BRAID_TEST_DELAY_LANE=LANE:MS holds lane LANE's TCP connect back by MS
// milliseconds, so a test can watch a lane open in the middle of a transfer.
std::optional<std::chrono::milliseconds> test_lane_delay(uint32_t lane_id) {
  const char* v = std::getenv("BRAID_TEST_DELAY_LANE");
  long id = -1, ms = 0;
  if (!v || std::sscanf(v, "%ld:%ld", &id, &ms) != 2 || id != static_cast<long>(lane_id) || ms <= 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

// A UDP lane's piece id names the transfer too, so the receiver's on_data
// knows where the bytes go without waiting for the piece's header.
uint64_t udp_piece_id(uint32_t transfer, core::PieceId piece) {
  return (static_cast<uint64_t>(transfer) << 32) | static_cast<uint32_t>(piece);
}

// "[tcp:|udp:]LOCAL=REMOTE:PORT"; `udp` keeps its value without a prefix.
bool parse_lane_spec(std::string spec, lanes::Endpoint& local, lanes::Endpoint& remote, bool& udp) {
  if (spec.rfind("udp:", 0) == 0) {
    udp = true;
    spec = spec.substr(4);
  } else if (spec.rfind("tcp:", 0) == 0) {
    udp = false;
    spec = spec.substr(4);
  }
  auto eq = spec.find('=');
  if (eq == std::string::npos) return false;
  auto l = lanes::parse_numeric_endpoint(spec.substr(0, eq), 0);
  auto r = lanes::parse_numeric_endpoint(spec.substr(eq + 1), kDefaultPort);
  if (!l || !r || l->family() != r->family()) return false;
  local = *l;
  remote = *r;
  return true;
}

}  // namespace

SenderSession::SenderSession(EventLog& log) : log_(log) {}

SenderSession::~SenderSession() { close(); }

Time SenderSession::now() const {
  return Time::from_ns(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_).count());
}

std::variant<std::unique_ptr<SenderSession>, Failure> SenderSession::connect(const ConnectOptions& opts,
                                                                            EventLog& log) {
  std::unique_ptr<SenderSession> s(new SenderSession(log));
  std::string error;
  s->host_ = LocalHost::load(opts.config_dir, error);
  if (!s->host_) return Failure{kExitFailure, error};
  std::optional<security::PairingCode> code;
  bool code_looked_mistyped = false;
  if (opts.code) {
    auto c = pairing_code_from_text(*opts.code);
    if (!c.code) return Failure{kExitAuthFailed, c.error};
    code.emplace(*c.code);
    code_looked_mistyped = c.looked_mistyped;
  }
  auto targets = lanes::resolve_endpoint(opts.remote, kDefaultPort, error);
  if (targets.empty()) return Failure{kExitUnreachable, error};
  log.write("status", {{"status", "connecting"}, {"remote", opts.remote}});

  security::UniqueFd fd;
  lanes::Endpoint remote;
  int err = 0;
  for (const auto& t : targets) {
    fd = lanes::connect_tcp(t, nullptr, opts.connect_timeout_ms, error, err);
    if (fd.valid()) {
      remote = t;
      break;
    }
  }
  if (!fd.valid()) return Failure{kExitUnreachable, "the receiver at " + opts.remote + " is unreachable: " + error};

  auto known = s->host_->known_peers();
  if (!known) return Failure{kExitFailure, known.error().message};
  security::SessionOptions so{security::Role::client, code ? &*code : nullptr, 30'000};
  auto session = security::Session::establish(fd.get(), *s->host_->tls, *s->host_->identity, known.value(), so);
  if (!session) {
    log.write("status", {{"status", "refused"}, {"reason", session.error().message}});
    std::string msg = session.error().message;
    if (code_looked_mistyped && session.error().code == security::Errc::pairing_failed)
      msg += " (the code given looks mistyped: its check symbol does not match)";
    return Failure{exit_code_for(session.error().code), msg};
  }
  s->peer_name_ = session.value().peer().name;
  s->session_id_ = session.value().session_id();
  s->tcp_cc_ = opts.tcp_cc;
  s->tcp_background_ = opts.cc == "background";
  s->secret_ = session.value().lane_secret();
  log.write("status", {{"status", "authenticated"},
                       {"peer", s->peer_name_},
                       {"how", session.value().peer().how == security::PeerAuth::paired ? "paired" : "pinned"}});

  // `--transport auto`: UDP lanes when the handshake already showed a long
  // RTT or a retransmission (where TCP's loss response costs most), TCP lanes
  // otherwise (loopback, LAN: TCP is cheaper per byte there).
  bool udp_default = opts.transport == Transport::udp;
  if (opts.transport == Transport::automatic) {
    uint32_t rtt_us = 0, retrans = 0;
    if (lanes::tcp_path_info(fd.get(), rtt_us, retrans)) udp_default = rtt_us >= 5000 || retrans > 0;
    log.write("transport", {{"choice", udp_default ? "udp" : "tcp"}, {"rtt_us", rtt_us}, {"retransmits", retrans}});
  }
  // From here on lane 0 carries sealed frames; the TLS session's work is done.
  const lanes::Endpoint local = lanes::local_endpoint_of(fd.get());
  auto link = lanes::LaneLink::create(std::move(fd), s->session_id_, 0, s->secret_, security::Role::client, error);
  if (!link) return Failure{kExitFailure, error};
  lanes::Incoming first = link->read();
  wire::Addresses addrs;
  if (first.status != lanes::ReadStatus::frame || first.type != wire::FrameType::addresses ||
      !wire::decode(first.payload, addrs))
    return Failure{kExitFailure, "the receiver did not send its addresses: " + first.reason};
  s->add_lane(std::move(link), local.str(), remote.str());
  s->open_extra_lanes(opts, local, remote, addrs.endpoints, udp_default);
  {
    // Lane 0 carries data unless UDP lanes do (see Lane::data).
    std::lock_guard lock(s->mu_);
    bool udp = false;
    for (auto& l : s->lanes_) udp = udp || (l->is_udp() && l->alive);
    s->lanes_[0]->data = !udp;
  }
  if (s->tcp_background_) s->tcp_pacer_ = std::thread([p = s.get()] { p->tcp_pacing_loop(); });
  return s;
}

void SenderSession::add_lane(std::unique_ptr<lanes::LaneLink> link, const std::string& local,
                             const std::string& remote) {
  auto lane = std::make_unique<Lane>();
  lane->id = link->id();
  lane->link = std::move(link);
  lane->local = local;
  lane->remote = remote;
  lane->name = "lane" + std::to_string(lane->id) + " " + local + "->" + remote;
  Lane& l = *lane;
  uint32_t joined = 0;  // the transfer the lane joined while it ran, if any
  {
    std::lock_guard lock(mu_);
    if (closing_) {  // opened too late for this session
      lane->link->shutdown();
      return;
    }
    lanes_.push_back(std::move(lane));
    attach_lane_locked(l);
    if (active_ && l.sched) joined = active_->id;
    drain_locked();
  }
  nlohmann::json fields = {{"lane", l.id}, {"local", local}, {"remote", remote}};
  if (!tcp_cc_.empty()) {
    // Data flows this way, so the sender's controller is the one that counts.
    if (lanes::set_congestion_control(l.link->fd(), tcp_cc_)) fields["cc"] = tcp_cc_;
    else fields["cc_error"] = "the kernel refused " + tcp_cc_ + ": " + std::strerror(errno);
  }
  if (joined) fields["joined_transfer"] = joined;
  log_.write("lane_open", fields);
  l.reader = std::thread([this, &l] { reader_loop(l); });
  l.writer = std::thread([this, &l] { writer_loop(l); });
}

void SenderSession::open_extra_lanes(const ConnectOptions& opts, const lanes::Endpoint& first_local,
                                     const lanes::Endpoint& first_remote,
                                     const std::vector<std::string>& advertised, bool udp_default) {
  using Path = LanePath;
  std::vector<Path> paths;
  if (!opts.lanes.empty()) {
    for (const auto& spec : opts.lanes) {
      lanes::Endpoint l, r;
      bool udp = udp_default;
      if (!parse_lane_spec(spec, l, r, udp)) {
        log_.write("lane_skipped", {{"spec", spec}, {"reason", "not [tcp:|udp:]LOCAL=REMOTE:PORT"}});
        continue;
      }
      paths.push_back({l, r, udp});
    }
  } else {
    // One path per (local interface, advertised address) pair of one family
    // and one kind (loopback with loopback only), `streams` lanes on each.
    const auto locals = lanes::interface_addresses();
    std::vector<Path> pairs;
    for (const auto& text : advertised) {
      auto r = lanes::parse_numeric_endpoint(text, kDefaultPort);
      if (!r || r->is_link_local() || r->is_loopback() != first_remote.is_loopback()) continue;
      for (const auto& l : locals) {
        if (l.family() != r->family() || l.is_loopback() != r->is_loopback()) continue;
        pairs.push_back({l, *r, udp_default});
      }
    }
    // The bootstrap lane's own path comes first; it already has one lane.
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Path& a, const Path& b) {
      auto first = [&](const Path& p) { return p.remote.str() == first_remote.str() && p.local->same_host(first_local); };
      return first(a) && !first(b);
    });
    const int streams = std::max(1, opts.streams);
    for (const auto& p : pairs) {
      const bool is_first = p.remote.str() == first_remote.str() && p.local->same_host(first_local);
      for (int k = is_first ? 1 : 0; k < streams; ++k) paths.push_back(p);
    }
    if (pairs.empty())  // nothing usable advertised: more streams on the bootstrap path
      for (int k = 1; k < std::max(1, opts.streams); ++k) paths.push_back({std::nullopt, first_remote, udp_default});
    // With UDP lanes lane 0 carries no data, so the bootstrap path gets its full count of UDP lanes.
    if (udp_default && !pairs.empty()) {
      for (const auto& p : pairs)
        if (p.remote.str() == first_remote.str() && p.local->same_host(first_local)) {
          paths.insert(paths.begin(), p);
          break;
        }
    }
  }
  if (paths.size() + 1 > opts.max_lanes) paths.resize(opts.max_lanes > 0 ? opts.max_lanes - 1 : 0);

  // --rate-limit caps the whole transfer: an even share per data lane planned
  // (lane 0 is one of them unless UDP lanes carry the data).
  bool any_udp = false;
  for (const auto& p : paths) any_udp = any_udp || p.udp;
  std::optional<Rate> per_lane;
  if (opts.rate_limit) {
    const size_t n = paths.size() + (any_udp ? 0 : 1);
    per_lane = Rate::bytes_per_sec(opts.rate_limit->bytes_per_second() / static_cast<double>(std::max<size_t>(1, n)));
    tcp_rate_limit_ = per_lane;  // the pacing thread starts after this
    if (!any_udp) lanes::set_max_pacing_rate(lanes_[0]->link->fd(), *per_lane);
  }

  // TCP lanes open in the background. connect() waits for them only a
  // little (kLaneGrace), so the first pieces are usually planned over every
  // lane; a lane that opens later joins the running transfer when it opens
  // (attach_lane_locked), and a slow or dead path (up to its 3 s connect
  // timeout) no longer holds up the start. UDP lanes are waited for:
  // whether lane 0 carries data depends on them.
  std::vector<std::thread> udp_connectors;
  {
    std::lock_guard lock(mu_);
    next_lane_id_ = static_cast<uint32_t>(paths.size() + 1);
    lane_timeout_ms_ = std::min(opts.connect_timeout_ms, 3000);
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    const auto lane_id = static_cast<uint32_t>(i + 1);
    if (paths[i].udp) {
      udp_connectors.emplace_back([this, &opts, p = paths[i], lane_id, per_lane] {
        open_udp_lane(opts, p, lane_id, per_lane);
      });
      continue;
    }
    std::lock_guard lock(mu_);
    start_tcp_connector_locked(paths[i], lane_id, per_lane);
  }
  for (auto& t : udp_connectors) t.join();
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, kLaneGrace, [&] { return connecting_ == 0; });
}

void SenderSession::open_tcp_lane(const LanePath& p, uint32_t lane_id, int timeout_ms, std::optional<Rate> per_lane) {
  if (const auto delay = test_lane_delay(lane_id)) std::this_thread::sleep_for(*delay);
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
  }
  std::string error;
  int err = 0;
  // Extra lanes wait less than the first (timeout_ms ≤ 3 s): an advertised
  // address that does not route (a container bridge, say) costs only its lane.
  auto fd = lanes::connect_tcp(p.remote, p.local ? &*p.local : nullptr, timeout_ms, error, err);
  if (!fd.valid()) {
    log_.write("lane_failed", {{"lane", lane_id}, {"remote", p.remote.str()}, {"reason", error}});
    return;
  }
  const std::string local = lanes::local_endpoint_of(fd.get()).str();
  if (per_lane) lanes::set_max_pacing_rate(fd.get(), *per_lane);
  timeval tv{10, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const int raw = fd.get();
  auto link = lanes::LaneLink::create(std::move(fd), session_id_, lane_id, secret_, security::Role::client, error);
  if (!link) return;
  wire::LaneJoin join;
  join.lane_id = lane_id;
  if (!link->send_message(join)) return;
  lanes::Incoming in = link->read();
  if (wire::LaneClosed refused; in.status == lanes::ReadStatus::frame && in.type == wire::FrameType::lane_closed &&
                                wire::decode(in.payload, refused)) {
    log_.write("lane_failed", {{"lane", lane_id}, {"remote", p.remote.str()},
                               {"reason", "refused by the receiver: " + refused.reason}});
    return;
  }
  wire::LaneWelcome welcome;
  if (in.status != lanes::ReadStatus::frame || in.type != wire::FrameType::lane_welcome ||
      !wire::decode(in.payload, welcome) || welcome.lane_id != lane_id) {
    log_.write("lane_failed", {{"lane", lane_id}, {"remote", p.remote.str()}, {"reason", "no welcome: " + in.reason}});
    return;
  }
  timeval none{0, 0};
  ::setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  add_lane(std::move(link), local, p.remote.str());
}

size_t SenderSession::live_lanes() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& l : lanes_) n += l->alive;
  return n;
}

// ---- scheduling glue ---------------------------------------------------------

void SenderSession::attach_lane_locked(Lane& lane) {
  if (!active_ || !lane.alive || !lane.data || lane.sched) return;
  core::LaneConfig cfg;
  cfg.name = lane.name;
  // UDP lanes resend lost packets themselves; their pieces finish out of order.
  cfg.in_order = !lane.is_udp();
  // The path's round trip as the transport has seen it (handshake, control
  // frames): a slow lane's first probe, a single sealed frame the receiver
  // times as ~0 ms, would otherwise read as a fast lane and take megabytes.
  if (lane.is_udp()) {
    if (const double ms = lane.udp->counters().srtt_ms; ms > 0) cfg.rtt_hint = Duration::seconds_f(ms / 1000.0);
  } else if (uint32_t rtt_us = 0, retrans = 0; lanes::tcp_path_info(lane.link->fd(), rtt_us, retrans) && rtt_us > 0) {
    cfg.rtt_hint = Duration::micros(rtt_us);
  }
  const core::LaneId id = active_->sched.add_lane(cfg, now());
  lane.sched = id;
  if (active_->sched_to_lane.size() <= id) active_->sched_to_lane.resize(id + 1);
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].get() == &lane) active_->sched_to_lane[id] = i;
  if (lane.is_udp()) {
    const auto c = lane.udp->counters();
    lane.wire_at_start = c.wire_bytes_sent;
    lane.rejected_at_start = c.rejected_total();
  } else {
    lane.wire_at_start = lane.link->bytes_sent();
    lane.rejected_at_start = lane.link->rejected_total();
  }
  lane.first_send = Time::never();
}

void SenderSession::drain_locked() {
  if (!active_) return;
  const Time t = now();
  while (auto action = active_->sched.poll_action(t)) {
    if (auto* a = std::get_if<core::Assign>(&*action)) {
      Lane& lane = *lanes_[active_->sched_to_lane[a->lane]];
      lane.queue.push_back(*a);
    } else if (auto* c = std::get_if<core::Cancel>(&*action)) {
      Lane& lane = *lanes_[active_->sched_to_lane[c->lane]];
      if (lane.sending == c->piece) {
        lane.cancel_current = true;
      } else if (auto it = lane.udp_handed.find(c->piece); it != lane.udp_handed.end()) {
        lane.udp->cancel_piece(it->second);  // posts to the lane's thread: no wait under mu_
        lane.udp_handed.erase(it);
      } else {
        std::erase_if(lane.queue, [&](const core::Assign& q) { return q.piece == c->piece; });
      }
    }
  }
  cv_.notify_all();
}

SenderSession::Lane* SenderSession::control_lane_locked() {
  // Control goes over the live lane with the lowest RTT (by acks); before any
  // measurement, over the lowest lane id.
  Lane* best = nullptr;
  double best_rtt = 1e300;
  for (auto& l : lanes_) {
    if (!l->alive || l->is_udp()) continue;  // UDP lanes carry piece data only
    double rtt = 1e299;
    if (active_ && l->sched) {
      // Only an RTT the lane's acks measured: the handshake's hint would make
      // the choice a coin toss between lanes of equal paths.
      const auto& est = active_->sched.estimator(*l->sched);
      if (est.measured() && est.srtt().ns() > 0) rtt = est.srtt().to_seconds();
    }
    if (!best || rtt < best_rtt) {
      best = l.get();
      best_rtt = rtt;
    }
  }
  return best;
}

template <class M>
bool SenderSession::send_control(const M& m) {
  // Try the best lane; if it fails, the next.
  for (int attempt = 0; attempt < 64; ++attempt) {
    Lane* lane = nullptr;
    {
      std::lock_guard lock(mu_);
      lane = control_lane_locked();
    }
    if (!lane) return false;
    if (lane->link->send_message(m)) return true;
    close_lane(*lane, "write failed: " + lane->link->send_error(), true);
  }
  return false;
}

template <class M>
bool SenderSession::send_ordered(const M& m) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    Lane* lane = nullptr;
    std::vector<wire::UdpPiece> again;
    {
      std::lock_guard lock(mu_);
      if (!active_) return false;
      lane = active_->ordered_lane;
      if (!lane || !lane->alive) {
        if (lane) again = active_->udp_headers;  // the old lane may have lost some
        lane = active_->ordered_lane = control_lane_locked();
      }
    }
    if (!lane) return false;
    if (!again.empty())
      log_.write("ordered_lane", {{"lane", lane->id}, {"headers_resent", again.size()}});
    bool ok = true;
    for (const auto& h : again) ok = ok && lane->link->send_message(h);
    if (ok && lane->link->send_message(m)) return true;
    close_lane(*lane, "write failed: " + lane->link->send_error(), true);
  }
  return false;
}

void SenderSession::close_lane(Lane& lane, const std::string& reason, bool announce) {
  {
    std::lock_guard lock(mu_);
    if (!lane.alive) {
      // The peer's announcement can arrive after we saw the lane's socket
      // close: its reason is the one worth keeping.
      if (reason.rfind(kPeerClosedPrefix, 0) == 0 && lane.close_reason.rfind(kPeerClosedPrefix, 0) != 0) {
        lane.close_reason = reason;
        log_.write("lane_closed", {{"lane", lane.id}, {"reason", reason}});
      }
      return;
    }
    lane.alive = false;
    lane.close_reason = reason;
    lane.cancel_current = true;
    if (active_ && lane.sched) {
      // Its pieces go back to the scheduler: sent ones as overdue, queued
      // ones to the front of the pending queue (core::Scheduler::on_lane_closed).
      active_->sched.on_lane_closed(*lane.sched, now());
      drain_locked();
    }
    lane.queue.clear();
    lane.udp_handed.clear();
    // Lane 0 takes data again when no data lane is left, rather than
    // leaving the transfer to stall while the control lane lives.
    bool data_left = false;
    for (auto& l : lanes_) data_left = data_left || (l->alive && l->data);
    if (!data_left && !lanes_.empty() && lanes_[0]->alive && !lanes_[0]->data) {
      lanes_[0]->data = true;
      attach_lane_locked(*lanes_[0]);
      drain_locked();
      log_.write("lane_data", {{"lane", lanes_[0]->id}, {"reason", "no other data lane left"}});
    }
    cv_.notify_all();
  }
  log_.write("lane_closed", {{"lane", lane.id}, {"reason", reason}});
  if (lane.is_udp()) {
    if (lane.udp) lane.udp->close(reason);  // idempotent; from its own on_closed too (it only posts)
  } else
    lane.link->shutdown();
  if (announce && !closing_) {
    wire::LaneClosed msg;
    msg.lane_id = lane.id;
    msg.reason = reason;
    (void)send_control(msg);
  }
}

void SenderSession::fail_transfer_locked(int code, const std::string& message) {
  if (!active_ || active_->fatal_code) return;
  active_->fatal_code = code;
  active_->fatal = message;
  cv_.notify_all();
}

// ---- lane threads ----------------------------------------------------------------

void SenderSession::reader_loop(Lane& lane) {
  for (;;) {
    lanes::Incoming in = lane.link->read();
    if (in.status == lanes::ReadStatus::rejected) {
      log_.write("frame_rejected", {{"lane", lane.id}, {"reason", in.reason}});
      continue;
    }
    if (in.status != lanes::ReadStatus::frame) {
      close_lane(lane, in.reason, in.status == lanes::ReadStatus::broken);
      return;
    }
    switch (in.type) {
      case wire::FrameType::ack: {
        wire::Ack ack;
        if (wire::decode(in.payload, ack)) on_transfer_ack(lane, ack);
        break;
      }
      case wire::FrameType::lane_ack: {
        wire::LaneAck la;
        if (!wire::decode(in.payload, la)) break;
        Lane* target = nullptr;
        {
          std::lock_guard lock(mu_);
          target = find_lane_by_id(lanes_, la.lane_id);
        }
        if (target) on_transfer_ack(*target, la.ack);
        break;
      }
      case wire::FrameType::udp_ready: {
        wire::UdpReady r;
        if (!wire::decode(in.payload, r)) break;
        std::lock_guard lock(mu_);
        udp_ready_[r.lane_id] = r;
        cv_.notify_all();
        break;
      }
      case wire::FrameType::accept: {
        wire::Accept a;
        if (!wire::decode(in.payload, a)) break;
        std::lock_guard lock(mu_);
        answers_[a.transfer_id] = OfferAnswer{true, {}, {}, std::move(a.held)};
        cv_.notify_all();
        break;
      }
      case wire::FrameType::refuse: {
        wire::Refuse r;
        if (!wire::decode(in.payload, r)) break;
        std::lock_guard lock(mu_);
        answers_[r.transfer_id] = OfferAnswer{false, r.reason, r.message, {}};
        cv_.notify_all();
        break;
      }
      case wire::FrameType::result: {
        wire::TransferResult r;
        if (!wire::decode(in.payload, r)) break;
        std::lock_guard lock(mu_);
        results_[r.transfer_id] = r;
        cv_.notify_all();
        break;
      }
      case wire::FrameType::error: {
        wire::ErrorMessage e;
        if (!wire::decode(in.payload, e)) break;
        std::lock_guard lock(mu_);
        peer_error_ = e;
        cv_.notify_all();
        break;
      }
      case wire::FrameType::lane_closed: {
        wire::LaneClosed c;
        if (!wire::decode(in.payload, c)) break;
        Lane* other = nullptr;
        {
          std::lock_guard lock(mu_);
          other = find_lane_by_id(lanes_, c.lane_id);
        }
        if (other) close_lane(*other, kPeerClosedPrefix + c.reason, false);
        break;
      }
      default:
        break;
    }
  }
}

// Waits for the lane's next Assign and marks it as the piece being sent;
// false when the lane or the session is closing.
bool SenderSession::take_next_locked(Lane& lane, std::unique_lock<std::mutex>& lock, core::Assign& a) {
  cv_.wait(lock, [&] { return !lane.alive || closing_ || (active_ && !lane.queue.empty()); });
  if (!lane.alive || closing_) return false;
  a = lane.queue.front();
  lane.queue.pop_front();
  lane.sending = a.piece;
  lane.cancel_current = false;
  return true;
}

void SenderSession::writer_loop(Lane& lane) {
  if (lane.is_udp()) return udp_feeder_loop(lane);
  std::vector<uint8_t> buf(kFrameHeaderSize + wire::PieceHeader::kSize + kFrameData + kFrameTagSize);
  for (;;) {
    core::Assign a;
    Active* t = nullptr;
    {
      std::unique_lock lock(mu_);
      if (!take_next_locked(lane, lock, a)) return;
      t = active_.get();
      const Time n = now();
      if (lane.first_send == Time::never()) lane.first_send = n;
      t->sched.on_send_started(*lane.sched, a.piece, n);
      drain_locked();
    }
    std::string error;
    const PieceEnd end = send_piece(lane, a, *t, buf, error);
    {
      std::lock_guard lock(mu_);
      lane.sending.reset();
      cv_.notify_all();
      if (end == PieceEnd::sent && lane.alive && lane.sched) {
        t->sched.on_written(*lane.sched, a.piece, now());
        drain_locked();
      } else if (end == PieceEnd::read_failed) {
        fail_transfer_locked(kExitFailure, error);
      }
    }
    if (end == PieceEnd::lane_failed) close_lane(lane, "write failed: " + lane.link->send_error(), true);
  }
}

SenderSession::PieceEnd SenderSession::send_piece(Lane& lane, const core::Assign& a, Active& t,
                                                  std::vector<uint8_t>& buf, std::string& error) {
  files::PieceHasher hasher(t.hash);
  const uint64_t begin = a.offset.count();
  const uint64_t end = begin + a.length.count();
  uint8_t* data = buf.data() + kFrameHeaderSize + wire::PieceHeader::kSize;
  for (uint64_t off = begin; off < end;) {
    if (lane.cancel_current) {
      wire::PieceAbort abort{t.id, a.piece};
      return lane.link->send_message(abort) ? PieceEnd::cancelled : PieceEnd::lane_failed;
    }
    const uint64_t n = std::min<uint64_t>(kFrameData, end - off);
    // Read the bytes once, straight into the frame buffer, and hash them
    // while they are hot in the cache; the sealer then encrypts in place.
    if (!read_range(t, off, n, data, error)) return PieceEnd::read_failed;
    hasher.update(std::span<const uint8_t>(data, n));
    wire::PieceHeader h;
    h.transfer_id = t.id;
    h.piece = a.piece;
    h.chunk = a.chunk;
    h.piece_offset = begin;
    h.piece_length = a.length.count();
    h.data_offset = off;
    if (off + n == end) {
      h.flags = wire::PieceHeader::kLast;
      h.hash = hasher.finish();
      std::lock_guard lock(mu_);
      if (t.piece_hash.size() <= a.piece) t.piece_hash.resize(a.piece + 1);
      t.piece_hash[a.piece] = h.hash;
    }
    wire::encode_piece_header(h, std::span<uint8_t, wire::PieceHeader::kSize>(buf.data() + kFrameHeaderSize,
                                                                               wire::PieceHeader::kSize));
    if (!lane.link->send_in_place(wire::FrameType::piece_data, buf, wire::PieceHeader::kSize + n))
      return PieceEnd::lane_failed;
    off += n;
  }
  return PieceEnd::sent;
}

// ---- TCP lanes' pacing cap (--background) ----------------------------------------
//
// The kernel runs TCP's congestion control; braid can only cap the socket's
// pacing rate. Every kTcpPacingEvery this thread reads each TCP data lane's
// TCP_INFO, feeds the lane's TcpPacingCap (pure, src/core/transport) and
// sets SO_MAX_PACING_RATE to its answer (or lifts it), never above the
// lane's --rate-limit share. Its syscalls run outside mu_.

void SenderSession::tcp_pacing_loop() {
  auto next = std::chrono::steady_clock::now();
  std::vector<Lane*> todo;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      next += kTcpPacingEvery;
      const auto now_tp = std::chrono::steady_clock::now();
      if (next < now_tp) next = now_tp;  // late (a busy machine): no catching up in a burst
      pacer_cv_.wait_until(lock, next, [&] { return closing_; });
      if (closing_) return;
      todo.clear();
      for (auto& l : lanes_)
        if (!l->is_udp() && l->alive && l->data) todo.push_back(l.get());
    }
    for (Lane* l : todo) pace_tcp_lane(*l);
  }
}

void SenderSession::pace_tcp_lane(Lane& lane) {
  const int fd = lane.link->fd();
  lanes::TcpKernelInfo k;
  if (!lanes::tcp_kernel_info(fd, k) || k.rtt_us == 0) return;
  if (!lane.tcp_cap) lane.tcp_cap = std::make_unique<transport::TcpPacingCap>();
  transport::TcpSample s;
  s.now = now();
  s.srtt = Duration::micros(k.rtt_us);
  s.bytes_acked = k.bytes_acked;
  s.retransmits = k.total_retrans;
  s.segs_in = k.segs_in;
  if (k.snd_mss) s.mss = Bytes(k.snd_mss);
  const transport::TcpPacingDecision d = lane.tcp_cap->on_sample(s);
  std::optional<Rate> want = d.cap;
  if (tcp_rate_limit_ && (!want || *want > *tcp_rate_limit_)) want = tcp_rate_limit_;
  bool restarted = false;
  if (d.restart_probe) restarted = lanes::restart_congestion_control(fd);
  if (want != lane.tcp_cap_on_socket) {
    const bool ok = want ? lanes::set_max_pacing_rate(fd, *want) : lanes::clear_max_pacing_rate(fd);
    if (ok) lane.tcp_cap_on_socket = want;
  }
  if (d.restart_probe)
    log_.write("pacing_restart", {{"lane", lane.id}, {"ok", restarted},
                                  {"cc", lanes::congestion_control_of(fd)},
                                  {"cap", want ? want->bytes_per_second() : -1.0}});
  std::lock_guard lock(mu_);
  auto& p = lane.tcp_pacing;
  p.active = true;
  p.cap = lane.tcp_cap_on_socket ? lane.tcp_cap_on_socket->bytes_per_second() : -1.0;
  p.queue_ms = lane.tcp_cap->queuing_delay().to_millis();
  p.srtt_ms = k.rtt_us / 1000.0;
  p.min_rtt_ms = k.min_rtt_us / 1000.0;
  p.acked = k.bytes_acked;
  p.kernel_pacing = k.pacing_rate;
  p.delivery_rate = k.delivery_rate;
  p.retrans = k.total_retrans;
  p.cwnd = k.snd_cwnd;
  p.restarts += d.restart_probe;
}

// ---- acks ------------------------------------------------------------------------

void SenderSession::on_transfer_ack(Lane& lane, const wire::Ack& ack) {
  std::lock_guard lock(mu_);
  if (!active_ || ack.transfer_id != active_->id || !lane.sched) return;
  if (ack.status != wire::AckStatus::ok) {
    if (ack.status == wire::AckStatus::hash_mismatch)
      fail_transfer_locked(kExitVerifyFailed, "the receiver's hash of piece " + std::to_string(ack.piece) +
                                                  " did not match (did a file change while it was sent?)");
    return;  // write failures come with a result message
  }
  if (ack.piece >= active_->sched.plan().piece_count()) return;
  if (lane.is_udp()) return;  // its transport ack was the scheduler's ack (on_udp_acked)
  active_->sched.on_ack(*lane.sched, ack.piece, now(), Duration::nanos(static_cast<int64_t>(ack.recv_duration_ns)));
  crash_if_asked_locked();
  log_progress_locked();
  drain_locked();
}

// ---- UDP lanes -------------------------------------------------------------------
//
// A UDP lane joins over a TCP lane: udp_open (lane id, the receiver address
// to bind) → the receiver opens a UDP socket for that lane alone and answers
// udp_ready with its port; the lane's datagrams are sealed with
// derive_lane_keys(lane secret, session id, lane id) like a TCP lane's frames.
// Per piece the feeder thread reads and hashes the whole piece, sends its
// header (udp_piece) over a TCP lane, then hands the bytes to the lane. The
// lane's own transport ack (on_piece_acked: every byte reached the
// receiver, which verifies and writes the piece once its header is there
// too) is the scheduler's on_ack, so a UDP lane's pace never waits on a TCP lane; the
// receiver reports only a piece whose hash failed (lane_ack), and the root
// hash at the end confirms them all.

void SenderSession::open_udp_lane(const ConnectOptions& opts, const LanePath& p, uint32_t lane_id,
                                  std::optional<Rate> per_lane) {
  auto fail = [&](const std::string& why) {
    log_.write("lane_failed", {{"lane", lane_id}, {"kind", "udp"}, {"remote", p.remote.str()}, {"reason", why}});
  };
  if (!send_control(wire::UdpOpen{lane_id, p.remote.str()})) return fail("no control lane");
  wire::UdpReady ready;
  {
    std::unique_lock lock(mu_);
    const bool got = cv_.wait_for(lock, std::chrono::milliseconds(std::min(opts.connect_timeout_ms, 3000)),
                                  [&] { return udp_ready_.count(lane_id) > 0 || closing_; });
    if (!got || closing_) return fail("the receiver did not answer udp_open");
    ready = udp_ready_[lane_id];
  }
  if (ready.address.empty()) return fail("refused by the receiver: " + ready.error);
  udp::UdpLaneConfig cfg;
  cfg.lane_id = lane_id;
  cfg.session_id = session_id_;
  cfg.lane_secret = secret_;
  cfg.role = security::Role::client;
  auto remote = udp::SocketAddress::parse(ready.address);
  if (!remote || remote->family() != p.remote.family()) return fail("the receiver gave a bad UDP address");
  cfg.remote = *remote;
  if (p.local) {
    lanes::Endpoint l = *p.local;
    l.set_port(0);
    if (auto a = udp::SocketAddress::parse(l.str())) cfg.local = *a;
  }
  if (!cfg.local.valid()) cfg.local = *udp::SocketAddress::parse(remote->family() == AF_INET6 ? "[::]:0" : "0.0.0.0:0");
  cfg.packet_size = opts.packet_size;
  cfg.cc = opts.cc;
  // BRAID_TEST_UDP_BLOCKED=1: every datagram the lanes send is lost, as
  // behind a firewall that drops UDP (the tests of the TCP fall-back).
  if (std::getenv("BRAID_TEST_UDP_BLOCKED")) cfg.fault.drop_probability = 1.0;
  cfg.rate_limit = per_lane;
  cfg.cc_seed = lane_id;
  // The lane object must exist before its thread can call events on it:
  // create the Lane first, then start the UDP lane into it.
  auto lane = std::make_unique<Lane>();
  lane->id = lane_id;
  lane->udp_kind = true;
  lane->udp_events = std::make_unique<UdpEvents>(*this, *lane);
  std::string error;
  auto udp_lane = udp::UdpSendLane::start(cfg, *lane->udp_events, error);
  if (!udp_lane) return fail(error);
  lane->udp = std::move(udp_lane);
  lane->local = lane->udp->local_address().str();
  lane->remote = ready.address;
  lane->name = "lane" + std::to_string(lane_id) + " udp " + lane->local + "->" + lane->remote;
  lane->tcp_fallback = Lane::TcpFallback{p.local, p.remote, per_lane};
  if (const char* k = std::getenv("BRAID_TEST_KILL_LANE")) {
    long id = -1;
    unsigned long long after = 0;
    if (std::sscanf(k, "%ld:%llu", &id, &after) == 2 && id == static_cast<long>(lane_id)) lane->kill_after = after;
  }
  Lane& l = *lane;
  {
    std::lock_guard lock(mu_);
    lanes_.push_back(std::move(lane));
    attach_lane_locked(l);
    drain_locked();
  }
  log_.write("lane_open", {{"lane", l.id}, {"kind", "udp"}, {"local", l.local}, {"remote", l.remote},
                           {"packet_size", l.udp->packet_size()}, {"cc", cfg.cc}});
  l.writer = std::thread([this, &l] { udp_feeder_loop(l); });
}

// A UDP lane that closed without ever hearing its peer: UDP does not get
// through on that path (a firewall, a middlebox), though TCP did (lane 0,
// udp_open). A TCP lane takes the path instead, joining the running
// transfer like any late lane — after first_contact_timeout (2 s), not the
// 10 s of silence that ends a lane that once worked.
void SenderSession::fall_back_to_tcp(Lane& lane) {
  if (!lane.udp || lane.udp->heard_peer() || !lane.tcp_fallback) return;
  std::lock_guard lock(mu_);
  if (closing_) return;
  const uint32_t id = next_lane_id_++;
  const Lane::TcpFallback f = *lane.tcp_fallback;
  lane.tcp_fallback.reset();  // once
  log_.write("udp_fallback", {{"lane", lane.id}, {"tcp_lane", id}, {"remote", f.remote.str()},
                              {"reason", "no answer over UDP: a TCP lane takes the path"}});
  start_tcp_connector_locked(LanePath{f.local, f.remote, false}, id, f.per_lane);
}

// A TCP lane connects on a thread of its own (close() joins it); `connecting_`
// counts those not done, for connect()'s short wait.
void SenderSession::start_tcp_connector_locked(const LanePath& p, uint32_t lane_id, std::optional<Rate> per_lane) {
  ++connecting_;
  connectors_.emplace_back([this, p, lane_id, per_lane] {
    open_tcp_lane(p, lane_id, lane_timeout_ms_, per_lane);
    std::lock_guard done(mu_);
    --connecting_;
    cv_.notify_all();
  });
}

bool SenderSession::read_range(Active& t, uint64_t off, uint64_t n, uint8_t* dst, std::string& error) {
  return t.layout.for_each(off, n, [&](const files::Extent& x) {
    auto fd = t.fds.get(x.entry, error);
    if (!fd) return false;
    uint8_t* p = dst + (x.transfer_offset - off);
    uint64_t left = x.length, at = x.file_offset;
    while (left > 0) {
      ssize_t got = ::pread(fd->get(), p, left, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        error = got == 0 ? "a file shrank while it was being sent" : std::string("read failed: ") + std::strerror(errno);
        return false;
      }
      p += got;
      at += static_cast<uint64_t>(got);
      left -= static_cast<uint64_t>(got);
    }
    return true;
  });
}

void SenderSession::udp_feeder_loop(Lane& lane) {
  for (;;) {
    core::Assign a;
    Active* t = nullptr;
    {
      std::unique_lock lock(mu_);
      if (!take_next_locked(lane, lock, a)) return;
      t = active_.get();
    }
    // Read and hash the whole piece first: its header (with the hash) goes
    // ahead of its bytes, and the lane keeps the buffer for resends.
    const uint64_t len = a.length.count();
    std::shared_ptr<uint8_t[]> buf(new uint8_t[std::max<uint64_t>(1, len)]);
    std::string error;
    const bool read_ok = read_range(*t, a.offset.count(), len, buf.get(), error);
    files::PieceHasher hasher(t->hash);
    if (read_ok) hasher.update(std::span<const uint8_t>(buf.get(), len));
    wire::UdpPiece header{lane.id, t->id, static_cast<uint32_t>(a.piece), static_cast<uint32_t>(a.chunk),
                          a.offset.count(), len, read_ok ? hasher.finish() : wire::Digest{}};
    bool go = false;
    {
      std::lock_guard lock(mu_);
      lane.sending.reset();
      cv_.notify_all();
      if (!read_ok) {
        fail_transfer_locked(kExitFailure, error);
        continue;
      }
      if (t->piece_hash.size() <= a.piece) t->piece_hash.resize(a.piece + 1);
      t->piece_hash[a.piece] = header.hash;
      go = lane.alive && !lane.cancel_current && lane.sched.has_value();
      if (go) {
        lane.udp_handed[a.piece] = udp_piece_id(t->id, a.piece);
        t->udp_headers.push_back(header);
      }
    }
    if (!go) continue;
    if (!send_ordered(header)) continue;  // no TCP lane left: the session is over
    lane.udp->send_piece(udp_piece_id(t->id, a.piece), a.offset.count(), len,
                         std::shared_ptr<const uint8_t>(buf, buf.get()));
    bool kill = false;
    {
      std::lock_guard lock(mu_);
      lane.udp_bytes += len;
      kill = lane.udp_bytes >= lane.kill_after;
    }
    if (kill) {
      log_.write("test_hook", {{"lane", lane.id}, {"hook", "BRAID_TEST_KILL_LANE"}});
      lane.udp->close("test hook: lane killed after " + std::to_string(lane.udp_bytes) + " bytes");
    }
  }
}

void SenderSession::on_udp_started(Lane& lane, uint64_t piece) {
  std::lock_guard lock(mu_);
  if (!active_ || !lane.sched || (piece >> 32) != active_->id) return;
  const Time n = now();
  if (lane.first_send == Time::never()) lane.first_send = n;
  active_->sched.on_send_started(*lane.sched, static_cast<core::PieceId>(piece & 0xffffffffu), n);
  drain_locked();
}

void SenderSession::on_udp_acked(Lane& lane, uint64_t piece) {
  std::lock_guard lock(mu_);
  const auto id = static_cast<core::PieceId>(piece & 0xffffffffu);
  lane.udp_handed.erase(id);
  if (!active_ || !lane.sched || (piece >> 32) != active_->id || id >= active_->sched.plan().piece_count()) return;
  report_transport_locked(lane);
  active_->sched.on_ack(*lane.sched, id, now());
  crash_if_asked_locked();
  log_progress_locked();
  drain_locked();
}

// Tells the scheduler what a UDP lane's controller measures, whenever the
// transport has heard new acks: its bottleneck estimate in file bytes (not
// wire bytes), and that the lane still delivers even while pieces stall.
void SenderSession::report_transport_locked(Lane& lane) {
  if (!active_ || !lane.sched || !lane.alive || !lane.udp) return;
  const auto c = lane.udp->counters();
  if (c.data_bytes_acked == lane.udp_acked_seen || c.wire_bytes_sent == 0) return;
  lane.udp_acked_seen = c.data_bytes_acked;
  const double data_share = static_cast<double>(c.data_bytes_sent) / static_cast<double>(c.wire_bytes_sent);
  active_->sched.on_transport_rate(*lane.sched, Rate::bytes_per_sec(c.bandwidth_bytes_per_sec * data_share), now());
}

// ---- transfers -----------------------------------------------------------------

std::optional<OfferAnswer> SenderSession::wait_answer(uint32_t transfer_id) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (auto it = answers_.find(transfer_id); it != answers_.end()) return it->second;
    if (peer_error_) return OfferAnswer{false, wire::RefuseReason::bad_offer, peer_error_->message, {}};
    bool any = false;
    for (auto& l : lanes_) any = any || l->alive;
    if (!any) return std::nullopt;
    cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

OfferAnswer SenderSession::offer_only(wire::Offer offer) {
  {
    std::lock_guard lock(mu_);
    offer.transfer_id = next_transfer_id_++;
  }
  if (!send_control(offer)) return {false, wire::RefuseReason::declined, "no lane left to send the offer", {}};
  auto answer = wait_answer(offer.transfer_id);
  if (!answer) return {false, wire::RefuseReason::declined, "every lane closed before the receiver answered", {}};
  return *answer;
}

namespace {
int exit_code_for_refusal(wire::RefuseReason r) {
  switch (r) {
    case wire::RefuseReason::not_writable: return kExitNotWritable;
    case wire::RefuseReason::no_space: return kExitDiskFull;
    default: return kExitRefused;
  }
}
int exit_code_for_result(wire::ResultStatus s) {
  switch (s) {
    case wire::ResultStatus::verified: return kExitOk;
    case wire::ResultStatus::no_space: return kExitDiskFull;
    case wire::ResultStatus::write_failed: return kExitNotWritable;
    default: return kExitVerifyFailed;
  }
}
}  // namespace

TransferOutcome SenderSession::send(const files::SourceTree& tree, const TransferOptions& opts) {
  TransferOutcome out;
  auto policy = core::make_policy(opts.policy);
  if (!policy) return {kExitUsage, "unknown policy '" + opts.policy + "'", {}};
  wire::Offer offer;
  offer.hash = opts.hash;
  offer.chunk_size = opts.chunk_size;
  offer.entries = tree.entries;
  {
    std::lock_guard lock(mu_);
    offer.transfer_id = next_transfer_id_++;
  }
  log_.write("status", {{"status", "offering"}, {"transfer", offer.transfer_id}, {"files", tree.file_count},
                        {"bytes", tree.total_bytes}});
  if (!send_control(offer)) return {kExitLanesLost, "every lane closed before the offer could be sent", {}};
  auto answer = wait_answer(offer.transfer_id);
  if (!answer) return {kExitLanesLost, "every lane closed before the receiver answered the offer", {}};
  if (!answer->accepted) {
    log_.write("status", {{"status", "refused"}, {"reason", wire::refuse_reason_name(answer->reason)},
                          {"message", json_safe(answer->message)}});
    return {exit_code_for_refusal(answer->reason), "the receiver refused the transfer: " + answer->message, {}};
  }
  log_.write("status", {{"status", "sending"}, {"transfer", offer.transfer_id}});

  core::Scheduler sched(core::ChunkPlan(Bytes(tree.total_bytes), Bytes(opts.chunk_size)), std::move(policy));
  auto active = std::make_unique<Active>(offer.transfer_id, tree, std::move(sched), opts.hash);
  // Before the transfer is published: no lane can take a piece yet.
  if (!answer->held.empty()) resume_held(*active, answer->held);
  if (const char* c = std::getenv("BRAID_TEST_CRASH_AFTER")) active->crash_after = std::strtoull(c, nullptr, 10);
  std::unique_lock lock(mu_);
  active_ = std::move(active);
  Active& t = *active_;
  t.start = now();
  if (opts.progress) t.progress = std::make_unique<ProgressLine>();
  for (auto& l : lanes_) attach_lane_locked(*l);
  drain_locked();

  auto any_alive = [&] {
    for (auto& l : lanes_)
      if (l->alive) return true;
    return false;
  };
  auto last_draw = std::chrono::steady_clock::now();
  auto idle_since = last_draw;
  while (!t.sched.complete() && !t.fatal_code && !peer_error_ && !results_.count(t.id)) {
    if (!any_alive()) {
      t.fatal_code = kExitLanesLost;
      t.fatal = "every lane to the receiver failed";
      break;
    }
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    if (auto to = t.sched.poll_timeout()) {
      const auto until = epoch_ + std::chrono::nanoseconds(to->ns());
      if (until < wake) wake = until;
    }
    cv_.wait_until(lock, wake);
    for (auto& l : lanes_)
      if (l->is_udp()) report_transport_locked(*l);
    t.sched.on_timeout(now());
    drain_locked();
    // Safety net: nothing in flight, nothing queued, no timer — the core
    // will never move again. Say so instead of hanging.
    bool busy = t.sched.poll_timeout().has_value();
    for (auto& l : lanes_) busy = busy || (l->alive && (l->sending || !l->queue.empty()));
    if (busy) {
      idle_since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - idle_since > std::chrono::seconds(5)) {
      log_.write("scheduler_stuck", {{"transfer", t.id}, {"delivered", t.sched.plan().delivered_bytes().count()}});
      t.fatal_code = kExitFailure;
      t.fatal = "internal error: the scheduler stopped handing out work with " +
                std::to_string(t.sched.plan().total().count() - t.sched.plan().delivered_bytes().count()) +
                " bytes left (see the log); the temporary files are kept";
      break;
    }
    log_sample_locked();
    if (t.progress && std::chrono::steady_clock::now() - last_draw > std::chrono::milliseconds(200)) {
      draw_progress_locked(false);
      last_draw = std::chrono::steady_clock::now();
    }
  }
  const Time sent_at = now();
  if (t.sched.complete() && !t.fatal_code) {
    std::vector<files::PieceRecord> records;
    for (core::PieceId p = 0; p < t.sched.plan().piece_count(); ++p) {
      const auto& piece = t.sched.plan().piece(p);
      if (piece.length.count() == 0) continue;
      if (p >= t.piece_hash.size() || !t.piece_hash[p]) {
        t.fatal_code = kExitFailure;
        t.fatal = "internal error: piece " + std::to_string(p) + " was acked but never hashed";
        break;
      }
      records.push_back({piece.offset.count(), piece.length.count(), *t.piece_hash[p]});
    }
    if (!t.fatal_code) {
      wire::Done done;
      done.transfer_id = t.id;
      done.root = files::root_hash(t.hash, records);
      out.report.root_hash = done.root.hex();
      lock.unlock();
      log_.write("status", {{"status", "verifying"}, {"transfer", t.id}});
      const bool sent = send_ordered(done);
      lock.lock();
      if (!sent) {
        t.fatal_code = kExitLanesLost;
        t.fatal = "every lane closed before the end of the transfer";
      }
      // The receiver fsyncs and renames: give it time, as long as a lane lives.
      while (!t.fatal_code && !results_.count(t.id) && !peer_error_ && any_alive())
        cv_.wait_for(lock, std::chrono::milliseconds(200));
    }
  }
  if (t.progress) draw_progress_locked(true);
  out.report = [&] {
    TransferReport r = build_report_locked(tree);
    r.root_hash = out.report.root_hash;
    r.seconds = (sent_at - t.start).to_seconds();
    r.rate_bytes_per_sec = r.seconds > 0 ? static_cast<double>(r.bytes - std::min(r.bytes, r.resumed_bytes)) / r.seconds : 0;
    r.policy = opts.policy;
    return r;
  }();
  if (auto it = results_.find(t.id); it != results_.end()) {
    out.exit_code = exit_code_for_result(it->second.status);
    out.message = it->second.status == wire::ResultStatus::verified
                      ? "every file arrived and verified"
                      : "the receiver reports: " + it->second.message;
    out.report.verified = it->second.status == wire::ResultStatus::verified;
    out.report.status = wire::result_status_name(it->second.status);
  } else if (peer_error_) {
    out.exit_code = kExitFailure;
    out.message = "the receiver ended the session: " + peer_error_->message;
    out.report.status = "peer_error";
  } else {
    out.exit_code = t.fatal_code ? t.fatal_code : kExitLanesLost;
    out.message = t.fatal.empty() ? "every lane closed before the receiver confirmed the transfer" : t.fatal;
    out.report.status = "failed";
  }
  log_.write("status", {{"status", out.exit_code == 0 ? "done" : "failed"}, {"transfer", t.id},
                        {"message", out.message}});
  // Forget the transfer (lanes stay for the next one) — but only once no
  // writer is inside send_piece with a pointer to it.
  for (auto& l : lanes_) {
    l->queue.clear();
    l->cancel_current = true;
    for (const auto& [piece, id] : l->udp_handed) l->udp->cancel_piece(id);  // e.g. duplicates still in flight
    l->udp_handed.clear();
  }
  cv_.wait(lock, [&] {
    for (auto& l : lanes_)
      if (l->sending) return false;
    return true;
  });
  for (auto& l : lanes_) l->sched.reset();
  active_.reset();
  return out;
}

void SenderSession::resume_held(Active& t, const std::vector<wire::HeldRange>& held) {
  const auto began = std::chrono::steady_clock::now();
  const HeldCheck check = check_held_ranges(
      held, t.hash, t.sched.plan().total().count(), t.sched.plan().chunk_size().count(),
      [&](uint64_t off, uint64_t n, uint8_t* dst, std::string& error) { return read_range(t, off, n, dst, error); });
  const auto ids = t.sched.mark_resumed(check.matched);
  t.piece_hash.resize(t.sched.plan().piece_count());
  t.resume_rejected_bytes = check.rejected_bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i]) {  // overlaps another range: sent again
      t.resume_rejected_bytes += check.matched[i].length.count();
      continue;
    }
    t.piece_hash[*ids[i]] = check.matched_hash[i];
    t.resumed_bytes += check.matched[i].length.count();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  log_.write("resume", {{"transfer", t.id},
                        {"held_ranges", held.size()},
                        {"resumed_bytes", t.resumed_bytes},
                        {"rejected_ranges", check.rejected},
                        {"rejected_bytes", t.resume_rejected_bytes},
                        {"check_seconds", seconds}});
}

// BRAID_TEST_CRASH_AFTER=BYTES: the end-to-end tests interrupt a transfer the
// hardest way — the process dies (SIGKILL, no cleanup) once BYTES of this
// run were acked.
void SenderSession::crash_if_asked_locked() {
  Active& t = *active_;
  if (t.crash_after == UINT64_MAX) return;
  if (t.sched.plan().delivered_bytes().count() - t.resumed_bytes < t.crash_after) return;
  log_.write("test_crash", {{"transfer", t.id}, {"delivered", t.sched.plan().delivered_bytes().count()}});
  std::raise(SIGKILL);
}

void SenderSession::log_progress_locked() {
  Active& t = *active_;
  const uint64_t total = t.sched.plan().total().count();
  const uint64_t done = t.sched.plan().delivered_bytes().count();
  while (t.next_decile <= 10 && (total == 0 || done * 10 >= total * static_cast<uint64_t>(t.next_decile))) {
    nlohmann::json lanes = nlohmann::json::array();
    for (size_t i = 0; i < t.sched.lane_count(); ++i) {
      const auto id = static_cast<core::LaneId>(i);
      lanes.push_back({{"lane", lanes_[t.sched_to_lane[i]]->id},
                       {"rate_bytes_per_sec", t.sched.estimator(id).rate().bytes_per_second()},
                       {"bytes", t.sched.stats(id).useful_bytes.count()},
                       {"alive", t.sched.lane_alive(id)}});
    }
    log_.write("progress", {{"transfer", t.id}, {"percent", t.next_decile * 10}, {"bytes", done}, {"lanes", lanes}});
    ++t.next_decile;
  }
}

// What each lane's scheduler state and (UDP) transport look like right now:
// a line per kSampleEvery, so rate collapses and stalls can be seen in time.
void SenderSession::log_sample_locked() {
  if (!log_.enabled()) return;
  Active& t = *active_;
  const Time n = now();
  if (n < t.next_sample) return;
  t.next_sample = n + kSampleEvery;
  nlohmann::json lanes = nlohmann::json::array();
  for (size_t i = 0; i < t.sched.lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    const Lane& l = *lanes_[t.sched_to_lane[i]];
    nlohmann::json j = {{"lane", l.id},
                        {"alive", t.sched.lane_alive(id)},
                        {"bytes", t.sched.stats(id).acked_bytes.count()},
                        {"estimate", t.sched.estimator(id).rate().bytes_per_second()},
                        {"rtt_ms", t.sched.planning_rtt(id).to_millis()},
                        {"outstanding", t.sched.outstanding(id).count()},
                        {"flights", t.sched.active_flights(id)},
                        {"stalls", t.sched.stats(id).stalls}};
    if (l.is_udp() && l.udp) {
      const auto c = l.udp->counters();
      j["udp"] = {{"pacing", c.rate_bytes_per_sec}, {"bandwidth", c.bandwidth_bytes_per_sec},
                  {"cwnd", c.cwnd_bytes},           {"in_flight", c.bytes_in_flight},
                  {"queued", c.queued_bytes},       {"srtt_ms", c.srtt_ms},
                  {"acked", c.data_bytes_acked},    {"lost", c.packets_lost}};
    } else if (!l.is_udp() && l.link) {
      // What the kernel's TCP holds for this lane: whether braid gives it enough to send.
      if (lanes::TcpKernelInfo k; lanes::tcp_kernel_info(l.link->fd(), k))
        j["kernel"] = {{"cwnd", uint64_t{k.snd_cwnd} * k.snd_mss},
                       {"in_flight", uint64_t{k.unacked} * k.snd_mss},
                       {"notsent", k.notsent_bytes},
                       {"delivery_rate", k.delivery_rate},
                       {"app_limited", k.delivery_rate_app_limited},
                       {"srtt_ms", k.rtt_us / 1000.0}};
    }
    if (!l.is_udp() && l.tcp_pacing.active) {
      // --background on a TCP lane: the pacing cap (bytes/s, null: none) and what the kernel reports.
      const auto& p = l.tcp_pacing;
      j["tcp"] = {{"cap", p.cap >= 0 ? nlohmann::json(p.cap) : nlohmann::json(nullptr)},
                  {"queue_ms", p.queue_ms},
                  {"srtt_ms", p.srtt_ms},
                  {"min_rtt_ms", p.min_rtt_ms},
                  {"kernel_pacing", p.kernel_pacing},
                  {"delivery_rate", p.delivery_rate},
                  {"cwnd", p.cwnd},
                  {"acked", p.acked},
                  {"retrans", p.retrans},
                  {"restarts", p.restarts}};
    }
    lanes.push_back(std::move(j));
  }
  log_.write("sample", {{"transfer", t.id}, {"delivered", t.sched.plan().delivered_bytes().count()}, {"lanes", lanes}});
}

void SenderSession::draw_progress_locked(bool final) {
  Active& t = *active_;
  ProgressLine::Snapshot s;
  s.total = t.sched.plan().total().count();
  s.done = t.sched.plan().delivered_bytes().count();
  s.resumed = t.resumed_bytes;
  s.elapsed = (now() - t.start).to_seconds();
  for (size_t i = 0; i < t.sched.lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    s.lanes.push_back({lanes_[t.sched_to_lane[i]]->id, t.sched.estimator(id).rate().bytes_per_second(),
                       t.sched.stats(id).useful_bytes.count(), t.sched.lane_alive(id)});
  }
  t.progress->draw(s, final);
}

TransferReport SenderSession::build_report_locked(const files::SourceTree& tree) {
  Active& t = *active_;
  TransferReport r;
  r.role = "send";
  r.transfer_id = t.id;
  r.peer = peer_name_;
  r.hash = wire::hash_algo_name(t.hash);
  r.chunk_size = t.sched.plan().chunk_size().count();
  r.files = tree.file_count;
  r.bytes = t.sched.plan().delivered_bytes().count();
  r.resumed_bytes = t.resumed_bytes;
  r.resume_rejected_bytes = t.resume_rejected_bytes;
  r.stalls = t.sched.total_stalls();
  r.duplicates = t.sched.total_duplicates();
  r.abandoned = t.sched.total_abandoned();
  // Shares of what this run sent: resumed bytes crossed no lane.
  const double total = static_cast<double>(std::max<uint64_t>(1, r.bytes - std::min(r.bytes, r.resumed_bytes)));
  for (size_t i = 0; i < t.sched.lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    const Lane& lane = *lanes_[t.sched_to_lane[i]];
    const auto& st = t.sched.stats(id);
    LaneReport l;
    l.lane_id = lane.id;
    l.name = lane.name;
    l.local = lane.local;
    l.remote = lane.remote;
    l.bytes = st.useful_bytes.count();
    l.acked_bytes = st.acked_bytes.count();
    l.kind = lane.is_udp() ? "udp" : "tcp";
    if (lane.is_udp()) {
      const auto c = lane.udp->counters();
      l.wire_bytes = c.wire_bytes_sent - lane.wire_at_start;
      l.rejected_frames = c.rejected_total() - lane.rejected_at_start;
      l.udp = UdpLaneReport{c.packets_sent,      c.packets_lost,  c.packets_retransmitted,
                            c.data_bytes_retransmitted, c.srtt_ms, c.min_rtt_ms,
                            c.rate_bytes_per_sec, c.cwnd_bytes};
    } else {
      l.wire_bytes = lane.link->bytes_sent() - lane.wire_at_start;
      l.rejected_frames = lane.link->rejected_total() - lane.rejected_at_start;
      if (lane.tcp_pacing.active) {  // --background: the pacing cap's last state
        const auto& p = lane.tcp_pacing;
        TcpPacingReport tp;
        if (p.cap >= 0) tp.cap_bytes_per_sec = p.cap;
        tp.queuing_delay_ms = p.queue_ms;
        tp.srtt_ms = p.srtt_ms;
        tp.min_rtt_ms = p.min_rtt_ms;
        tp.kernel_pacing_bytes_per_sec = p.kernel_pacing;
        tp.segments_retransmitted = p.retrans;
        tp.restarts = p.restarts;
        l.tcp_pacing = tp;
      }
    }
    l.chunks = st.pieces;
    l.share = static_cast<double>(l.bytes) / total;
    if (lane.first_send != Time::never() && st.acked_bytes.count() > 0 && st.last_ack > lane.first_send) {
      l.active_seconds = (st.last_ack - lane.first_send).to_seconds();
      l.rate_bytes_per_sec = st.acked_bytes.as_double() / l.active_seconds;
    }
    l.estimate_bytes_per_sec = t.sched.estimator(id).rate().bytes_per_second();
    l.rtt_ms = t.sched.estimator(id).srtt().to_millis();
    l.stalls = st.stalls;
    l.duplicates = st.duplicates;
    l.abandoned = st.abandoned;
    l.open_at_end = lane.alive;
    l.close_reason = lane.close_reason;
    r.lanes.push_back(l);
  }
  std::sort(r.lanes.begin(), r.lanes.end(), [](const LaneReport& a, const LaneReport& b) { return a.lane_id < b.lane_id; });
  return r;
}

void SenderSession::close() {
  // The result is known: nothing here may wait on a lane whose path died.
  // A lane's socket is shut down after at most kByeWait + kPeerCloseWait;
  // shutdown(SHUT_RDWR) wakes every thread blocked in a send or recv on it,
  // so the joins below wait only for threads that are already returning.
  constexpr auto kByeWait = std::chrono::milliseconds(200);        // bye to the kernel: instant on a live lane
  constexpr auto kPeerCloseWait = std::chrono::milliseconds(300);  // the receiver closes its lanes on bye: 1 RTT
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
  }
  // Bye on a thread of its own, waited for only a little: the control lane
  // may be a dead path, whose full socket buffer — or a writer stuck in a
  // send there, holding the lane's send lock — would block it until the
  // kernel gives up on the connection (TCP_USER_TIMEOUT).
  bool bye_done = false;
  std::thread bye;
  try {
    bye = std::thread([this, &bye_done] {
      (void)send_control(wire::Bye{});
      std::lock_guard lock(mu_);
      bye_done = true;
      cv_.notify_all();
    });
  } catch (const std::system_error&) {
    bye_done = true;  // no thread: no bye; the receiver sees the lanes close instead
  }
  std::vector<std::thread> connectors;
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, kByeWait, [&] { return bye_done; });
    const bool bye_sent = bye_done;
    closing_ = true;
    cv_.notify_all();
    pacer_cv_.notify_all();
    connectors.swap(connectors_);
    // The receiver answers bye by closing its lanes; wait a little for that
    // (its log then shows a clean end), then close whatever is left.
    if (bye_sent)
      cv_.wait_for(lock, kPeerCloseWait, [&] {
        for (auto& l : lanes_)
          if (l->alive) return false;
        return true;
      });
  }
  // A lane still connecting adds nothing once closing_ is set (add_lane).
  for (auto& l : lanes_) {
    if (l->is_udp()) {
      if (l->udp) l->udp->close("session closed");
    } else {
      l->link->shutdown();
    }
  }
  if (bye.joinable()) bye.join();
  if (tcp_pacer_.joinable()) tcp_pacer_.join();
  for (auto& l : lanes_) {
    if (l->reader.joinable()) l->reader.join();
    if (l->writer.joinable()) l->writer.join();
  }
  // Bounded by the connect timeout (≤ 3 s) and the welcome's SO_RCVTIMEO;
  // usually long done.
  for (auto& t : connectors) t.join();
  // A UDP lane's destructor joins its I/O thread, whose events take mu_: not under it.
  for (auto& l : lanes_) {
    auto u = std::move(l->udp);  // l->udp is null while its thread's last events run
    u.reset();
  }
  log_.write("status", {{"status", "closed"}});
}

}  // namespace braid::transfer
