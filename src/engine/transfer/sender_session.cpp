#include "engine/transfer/sender_session.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/policy_registry.hpp"
#include "engine/files/fd_cache.hpp"
#include "engine/files/file_layout.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/transfer/code_text.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/progress_line.hpp"
#include "engine/transfer/resume_check.hpp"
#include "engine/transfer/stream_lane.hpp"
#include "engine/transfer/udp_data_lane.hpp"

namespace braid::transfer {

// The running transfer's files, read by every lane's writer.
class SenderSession::Source final : public PieceSource {
 public:
  Source(uint32_t id, const files::SourceTree& tree, wire::HashAlgo hash)
      : id_(id),
        hash_(hash),
        layout_(tree.entries),
        fds_(512, [&tree](size_t entry, std::string& error) {
          int fd = ::open(tree.local_paths[entry].c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
          if (fd < 0) error = "cannot open '" + tree.local_paths[entry] + "': " + std::strerror(errno);
          return security::UniqueFd(fd);
        }) {}
  uint32_t transfer_id() const override { return id_; }
  wire::HashAlgo hash() const override { return hash_; }
  bool read(uint64_t off, uint64_t n, uint8_t* dst, std::string& error) override {
    return layout_.for_each(off, n, [&](const files::Extent& x) {
      auto fd = fds_.get(x.entry, error);
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

 private:
  uint32_t id_;
  wire::HashAlgo hash_;
  files::FileLayout layout_;
  files::FdCache fds_;
};

// One transfer in progress (engine side: the machine holds the protocol state).
struct SenderSession::Active {
  uint32_t id = 0;
  std::shared_ptr<Source> source;
  std::optional<session::TransferOutcome> outcome;
  Time start;
  Time ended_at;
  int next_decile = 1;
  Time next_sample;
  std::unique_ptr<ProgressLine> progress;
  // Per lane: its counters when the transfer began, and its first piece's start.
  std::map<LaneNo, DataLaneCounters> at_start;
  std::map<LaneNo, Time> first_send;
  std::map<LaneNo, std::string> names;  // lanes seen in this transfer (for the report, even once closed)
  // BRAID_TEST_CRASH_AFTER: die like a crash once this many bytes of this run were acked.
  uint64_t crash_after = UINT64_MAX;
};

namespace {

// BRAID_TEST_DELAY_LANE=LANE:MS holds lane LANE's TCP connect back by MS
// milliseconds, so a test can watch a lane open in the middle of a transfer.
std::optional<std::chrono::milliseconds> test_lane_delay(uint32_t lane_id) {
  const char* v = std::getenv("BRAID_TEST_DELAY_LANE");
  long id = -1, ms = 0;
  if (!v || std::sscanf(v, "%ld:%ld", &id, &ms) != 2 || id != static_cast<long>(lane_id) || ms <= 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
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

std::string path_key(const session::PathSpec& p) { return p.remote + "|" + p.local; }

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

SenderSession::SenderSession(EventLog& log, const ConnectOptions& opts) : log_(log), opts_(opts) {}

SenderSession::~SenderSession() { close(); }

Time SenderSession::now() const {
  return Time::from_ns(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_).count());
}

std::variant<std::unique_ptr<SenderSession>, Failure> SenderSession::connect(const ConnectOptions& opts,
                                                                            EventLog& log) {
  std::unique_ptr<SenderSession> s(new SenderSession(log, opts));
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
  s->background_ = opts.cc == "background";
  s->secret_ = session.value().lane_secret();
  log.write("status", {{"status", "authenticated"},
                       {"peer", s->peer_name_},
                       {"how", session.value().peer().how == security::PeerAuth::paired ? "paired" : "pinned"}});

  // `--transport auto`: UDP lanes when the handshake already showed a long
  // RTT or a retransmission (where TCP's loss response costs most), TCP lanes
  // otherwise (loopback, LAN: TCP is cheaper per byte there).
  uint32_t rtt_us = 0, retrans = 0;
  const bool have_rtt = lanes::tcp_path_info(fd.get(), rtt_us, retrans);
  bool udp_default = opts.transport == Transport::udp;
  if (opts.transport == Transport::automatic) {
    if (have_rtt) udp_default = rtt_us >= 5000 || retrans > 0;
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
  nlohmann::json lane0 = {{"lane", 0}, {"local", local.str()}, {"remote", remote.str()}};
  if (!opts.tcp_cc.empty()) {
    // Data flows this way, so the sender's controller is the one that counts.
    if (lanes::set_congestion_control(link->fd(), opts.tcp_cc)) lane0["cc"] = opts.tcp_cc;
    else lane0["cc_error"] = "the kernel refused " + opts.tcp_cc + ": " + std::strerror(errno);
  }

  session::SenderConfig cfg;
  cfg.rate_limit = opts.rate_limit;
  cfg.max_lanes = opts.max_lanes;
  cfg.join_timeout = Duration::millis(std::min(opts.connect_timeout_ms, 3000));
  cfg.root_hash = [](wire::HashAlgo a, std::vector<session::PieceRecord> records) {
    std::vector<files::PieceRecord> r;
    r.reserve(records.size());
    for (const auto& x : records) r.push_back({x.offset, x.length, x.hash});
    return files::root_hash(a, std::move(r));
  };
  const auto traits0 = session::LaneTraits::tcp(have_rtt && rtt_us > 0 ? std::optional(Duration::micros(rtt_us))
                                                                        : std::nullopt);
  const auto paths = s->plan_paths(local, remote, addrs.endpoints, udp_default);
  {
    std::lock_guard lock(s->mu_);
    s->machine_ = std::make_unique<session::Sender>(cfg);
    StreamLane::Options lo{traits0, local.str(), remote.str(), true, s->background_};
    s->lanes_[0] = std::make_unique<StreamLane>(std::move(link), lo, static_cast<DataLaneEvents&>(*s));
    s->alive_.insert(0);
    log.write("lane_open", lane0);
    s->machine_->start(traits0, s->now());
    s->machine_->add_paths(paths, s->now());
    s->drain_locked();
  }
  // Lanes open in the background; wait a little for them (kLaneGrace), so
  // the first pieces are usually planned over every lane — UDP lanes a
  // little longer (udp_open, udp_ready), a dead path not at all: a lane that
  // opens later joins the running transfer.
  bool any_udp = false;
  for (const auto& p : paths) any_udp = any_udp || p.kind == session::LaneKind::udp;
  const auto grace = std::chrono::nanoseconds((any_udp ? Duration::millis(std::min(opts.connect_timeout_ms, 3000))
                                                       : kLaneGrace).ns());
  {
    std::unique_lock lock(s->mu_);
    s->cv_.wait_for(lock, grace, [&] { return s->machine_->opening_lanes() == 0; });
  }
  if (s->background_) s->pacer_ = std::thread([p = s.get()] { p->tcp_pacing_loop(); });
  return s;
}

// One path per (local interface, advertised address) pair of one family and
// one kind (loopback with loopback only), `streams` lanes on each; or the
// `--lane` specs as given.
std::vector<session::PathSpec> SenderSession::plan_paths(const lanes::Endpoint& first_local,
                                                         const lanes::Endpoint& first_remote,
                                                         const std::vector<std::string>& advertised,
                                                         bool udp_default) {
  std::vector<session::PathSpec> out;
  auto add = [&](const std::optional<lanes::Endpoint>& l, const lanes::Endpoint& r, bool udp) {
    session::PathSpec p{udp ? session::LaneKind::udp : session::LaneKind::tcp, l ? l->str() : "", r.str()};
    paths_[path_key(p)] = PathInfo{l, r};
    out.push_back(p);
  };
  if (!opts_.lanes.empty()) {
    for (const auto& spec : opts_.lanes) {
      lanes::Endpoint l, r;
      bool udp = udp_default;
      if (!parse_lane_spec(spec, l, r, udp)) {
        log_.write("lane_skipped", {{"spec", spec}, {"reason", "not [tcp:|udp:]LOCAL=REMOTE:PORT"}});
        continue;
      }
      add(l, r, udp);
    }
    return out;
  }
  const auto locals = lanes::interface_addresses();
  struct Pair {
    lanes::Endpoint l, r;
  };
  std::vector<Pair> pairs;
  for (const auto& text : advertised) {
    auto r = lanes::parse_numeric_endpoint(text, kDefaultPort);
    if (!r || r->is_link_local() || r->is_loopback() != first_remote.is_loopback()) continue;
    for (const auto& l : locals) {
      if (l.family() != r->family() || l.is_loopback() != r->is_loopback()) continue;
      pairs.push_back({l, *r});
    }
  }
  auto is_first = [&](const Pair& p) { return p.r.str() == first_remote.str() && p.l.same_host(first_local); };
  // The bootstrap lane's own path comes first; it already has one lane
  // (with UDP lanes it carries no data, so that path gets its full count).
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) { return is_first(a) && !is_first(b); });
  const int streams = std::max(1, opts_.streams);
  for (const auto& p : pairs)
    for (int k = is_first(p) && !udp_default ? 1 : 0; k < streams; ++k) add(p.l, p.r, udp_default);
  if (pairs.empty())  // nothing usable advertised: more streams on the bootstrap path
    for (int k = udp_default ? 0 : 1; k < streams; ++k) add(std::nullopt, first_remote, udp_default);
  return out;
}

size_t SenderSession::live_lanes() const {
  std::lock_guard lock(mu_);
  return machine_ ? machine_->open_lanes() : 0;
}

DataLane* SenderSession::lane_locked(session::LaneNo id) {
  auto it = lanes_.find(id);
  return it == lanes_.end() ? nullptr : it->second.get();
}

// ---- the machine's actions ----------------------------------------------------------

void SenderSession::drain_locked() {
  while (auto a = machine_->poll_action()) std::visit([this](auto& x) { act(x); }, *a);
  cv_.notify_all();
}

void SenderSession::act(session::SendMessage& a) {
  if (DataLane* l = lane_locked(a.lane)) l->send_message(a.msg);
}

void SenderSession::act(session::OpenLane& a) {
  if (closing_) return;
  if (!a.udp_address.empty()) return start_udp_lane(a.lane, a.path, a.udp_address);
  // TCP lanes connect on a thread of their own, joined once done.
  auto done = std::make_shared<std::atomic<bool>>(false);
  connectors_.push_back(Connector{std::thread([this, id = a.lane, path = a.path, done] {
                                    connect_lane(id, path);
                                    *done = true;
                                  }),
                                  done});
}

void SenderSession::connect_lane(session::LaneNo id, session::PathSpec path) {
  if (const auto delay = test_lane_delay(id)) std::this_thread::sleep_for(*delay);
  PathInfo where;
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    where = paths_.at(path_key(path));
  }
  std::string error;
  int err = 0;
  // Extra lanes wait less than the first (≤ 3 s): an advertised address
  // that does not route (a container bridge, say) costs only its lane.
  auto fd = lanes::connect_tcp(where.remote, where.local ? &*where.local : nullptr,
                               std::min(opts_.connect_timeout_ms, 3000), error, err);
  std::unique_ptr<lanes::LaneLink> link;
  if (fd.valid()) link = lanes::LaneLink::create(std::move(fd), session_id_, id, secret_, security::Role::client, error);
  std::lock_guard lock(mu_);
  if (closing_) return;
  if (!link) {
    machine_->handle_lane_failed(id, error, false, now());
    return drain_locked();
  }
  if (!machine_->expects_connect(id)) return;  // given up meanwhile (its join timed out): the link closes here
  uint32_t rtt_us = 0, retrans = 0;
  const bool rtt = lanes::tcp_path_info(link->fd(), rtt_us, retrans) && rtt_us > 0;
  const auto traits = session::LaneTraits::tcp(rtt ? std::optional(Duration::micros(rtt_us)) : std::nullopt);
  nlohmann::json fields = {{"lane", id}, {"local", lanes::local_endpoint_of(link->fd()).str()},
                           {"remote", where.remote.str()}};
  if (!opts_.tcp_cc.empty()) {
    // Data flows this way, so the sender's controller is the one that counts.
    if (lanes::set_congestion_control(link->fd(), opts_.tcp_cc)) fields["cc"] = opts_.tcp_cc;
    else fields["cc_error"] = "the kernel refused " + opts_.tcp_cc + ": " + std::strerror(errno);
  }
  StreamLane::Options lo{traits, fields["local"], where.remote.str(), true, background_};
  lanes_[id] = std::make_unique<StreamLane>(std::move(link), lo, static_cast<DataLaneEvents&>(*this));
  alive_.insert(id);
  pending_open_[id] = std::move(fields);
  machine_->handle_lane_connected(id, traits, now());
  drain_locked();
}

void SenderSession::start_udp_lane(session::LaneNo id, const session::PathSpec& path, const std::string& address) {
  const PathInfo& where = paths_.at(path_key(path));
  udp::UdpLaneConfig cfg;
  cfg.lane_id = id;
  cfg.session_id = session_id_;
  cfg.lane_secret = secret_;
  cfg.role = security::Role::client;
  auto remote = udp::SocketAddress::parse(address);
  std::string error;
  if (!remote || remote->family() != where.remote.family()) error = "the receiver gave a bad UDP address";
  if (error.empty()) {
    cfg.remote = *remote;
    if (where.local) {
      lanes::Endpoint l = *where.local;
      l.set_port(0);
      if (auto a = udp::SocketAddress::parse(l.str())) cfg.local = *a;
    }
    if (!cfg.local.valid())
      cfg.local = *udp::SocketAddress::parse(remote->family() == AF_INET6 ? "[::]:0" : "0.0.0.0:0");
    cfg.packet_size = opts_.packet_size;
    cfg.cc = opts_.cc;
    // BRAID_TEST_UDP_BLOCKED=1: every datagram the lanes send is lost, as
    // behind a firewall that drops UDP (the tests of the TCP fall-back).
    if (std::getenv("BRAID_TEST_UDP_BLOCKED")) cfg.fault.drop_probability = 1.0;
    cfg.cc_seed = id;
  }
  std::unique_ptr<UdpDataLane> lane;
  if (error.empty()) lane = UdpDataLane::start(cfg, static_cast<DataLaneEvents&>(*this), error);
  if (!lane) {
    machine_->handle_lane_failed(id, error, false, now());
    return;  // the caller drains
  }
  if (const char* k = std::getenv("BRAID_TEST_KILL_LANE")) {
    long kid = -1;
    unsigned long long after = 0;
    if (std::sscanf(k, "%ld:%llu", &kid, &after) == 2 && kid == static_cast<long>(id)) lane->kill_after(after);
  }
  log_.write("lane_open", {{"lane", id}, {"kind", "udp"}, {"local", lane->local()}, {"remote", address},
                           {"packet_size", lane->packet_size()}, {"cc", cfg.cc}});
  const auto traits = lane->traits();
  lanes_[id] = std::move(lane);
  alive_.insert(id);
  machine_->handle_lane_connected(id, traits, now());
}

void SenderSession::act(session::CloseLane& a) {
  auto it = lanes_.find(a.lane);
  close_reasons_[a.lane] = a.reason;
  if (it == lanes_.end()) return;
  it->second->close(a.reason);
  closed_.push_back(std::move(it->second));
  lanes_.erase(it);
}

void SenderSession::act(session::SendPiece& a) {
  DataLane* l = lane_locked(a.lane);
  if (!l || !active_ || active_->id != a.transfer) return;
  l->send_piece(active_->source, a.assign);
}

void SenderSession::act(session::ReleasePiece& a) {
  if (DataLane* l = lane_locked(a.lane)) l->release_piece(a.transfer, a.piece);
}

void SenderSession::act(session::CancelPiece& a) {
  if (DataLane* l = lane_locked(a.lane)) l->cancel_piece(a.transfer, a.piece);
}

void SenderSession::act(session::SetLaneRate& a) {
  if (DataLane* l = lane_locked(a.lane)) l->set_rate(a.rate);
}

void SenderSession::act(session::CheckHeld& a) { checks_.push_back(std::move(a)); }

void SenderSession::act(session::TransferEnded& a) {
  for (auto& [id, l] : lanes_) l->drop_transfer(a.transfer);
  if (active_ && active_->id == a.transfer) {
    active_->outcome = a.outcome;
    active_->ended_at = now();
  }
}

void SenderSession::act(session::Note& n) {
  if (n.event == "lane_open") {
    // A lane's own line, with what the connect learned; joined_transfer when
    // it joined a running transfer.
    nlohmann::json fields = pending_open_.count(n.lane) ? pending_open_[n.lane] : nlohmann::json{{"lane", n.lane}};
    pending_open_.erase(n.lane);
    if (active_ && !active_->outcome && n.lane != 0) fields["joined_transfer"] = active_->id;
    if (n.lane != 0 && !fields.contains("kind")) log_.write("lane_open", fields);
    return;
  }
  nlohmann::json f = {{"lane", n.lane}, {"reason", n.detail}};
  if (n.event == "ordered_lane") f = {{"lane", n.lane}, {"headers_resent", n.count}};
  log_.write(n.event, f);
}

// ---- lane events (their threads) ----------------------------------------------------

void SenderSession::on_message(LaneNo lane, const session::ToSender& msg) {
  std::lock_guard lock(mu_);
  if (!machine_) return;
  if (const auto* e = std::get_if<wire::ErrorMessage>(&msg)) peer_error_ = *e;
  machine_->handle_message(lane, msg, now());
  if (std::holds_alternative<wire::Ack>(msg) || std::holds_alternative<wire::LaneAck>(msg)) {
    crash_if_asked_locked();
    log_progress_locked();
  }
  drain_locked();
}

void SenderSession::on_piece_started(LaneNo lane, uint32_t transfer, core::PieceId piece) {
  std::lock_guard lock(mu_);
  if (!active_ || active_->id != transfer) return;
  const Time n = now();
  active_->first_send.emplace(lane, n);
  machine_->handle_piece_started(lane, piece, n);
  drain_locked();
}

void SenderSession::on_piece_hashed(LaneNo lane, uint32_t transfer, core::PieceId piece, const wire::Digest& hash) {
  std::lock_guard lock(mu_);
  if (!active_ || active_->id != transfer) return;
  machine_->handle_piece_hashed(lane, piece, hash, now());
  drain_locked();
}

void SenderSession::on_piece_written(LaneNo lane, uint32_t transfer, core::PieceId piece) {
  std::lock_guard lock(mu_);
  if (!active_ || active_->id != transfer) return;
  machine_->handle_piece_written(lane, piece, now());
  drain_locked();
}

void SenderSession::on_piece_delivered(LaneNo lane, uint32_t transfer, core::PieceId piece) {
  std::lock_guard lock(mu_);
  if (!active_ || active_->id != transfer) return;
  machine_->handle_piece_delivered(lane, piece, now());
  crash_if_asked_locked();
  log_progress_locked();
  drain_locked();
}

void SenderSession::on_transport_rate(LaneNo lane, Rate rate) {
  std::lock_guard lock(mu_);
  if (machine_) machine_->handle_transport_rate(lane, rate, now());
}

void SenderSession::on_read_failed(LaneNo, const std::string& reason) {
  std::lock_guard lock(mu_);
  machine_->handle_read_failed(reason, now());
  drain_locked();
}

void SenderSession::on_closed(LaneNo lane, const std::string& reason, bool heard_peer) {
  std::lock_guard lock(mu_);
  alive_.erase(lane);
  cv_.notify_all();
  if (!machine_ || closing_) return;
  machine_->handle_lane_failed(lane, reason, heard_peer, now());
  drain_locked();
}

// ---- transfers ------------------------------------------------------------------------

OfferAnswer SenderSession::offer_only(wire::Offer offer) {
  session::TransferSpec spec;
  spec.entries = std::move(offer.entries);
  spec.hash = offer.hash;
  spec.chunk_size = offer.chunk_size;
  spec.answer_only = true;
  std::unique_lock lock(mu_);
  const auto id = machine_->start_transfer(std::move(spec), now());
  if (!id) return {false, wire::RefuseReason::declined, "a transfer is running", {}};
  active_ = std::make_unique<Active>();
  active_->id = *id;
  drain_locked();
  while (!active_->outcome) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
    machine_->handle_timeout(now());
    drain_locked();
  }
  const auto o = *active_->outcome;
  active_.reset();
  if (o.end == session::TransferOutcome::End::answered) return {true, {}, {}, o.held};
  if (o.end == session::TransferOutcome::End::refused) return {false, o.refusal, o.message, {}};
  return {false, wire::RefuseReason::declined, o.message, {}};
}

TransferOutcome SenderSession::send(const files::SourceTree& tree, const TransferOptions& opts) {
  auto policy = core::make_policy(opts.policy);
  if (!policy) return {kExitUsage, "unknown policy '" + opts.policy + "'", {}};
  session::TransferSpec spec;
  spec.entries = tree.entries;
  spec.hash = opts.hash;
  spec.chunk_size = opts.chunk_size;
  spec.policy = std::move(policy);
  std::unique_lock lock(mu_);
  const auto id = machine_->start_transfer(std::move(spec), now());
  if (!id) return {kExitLanesLost, "every lane closed before the offer could be sent", {}};
  active_ = std::make_unique<Active>();
  Active& t = *active_;
  t.id = *id;
  t.source = std::make_shared<Source>(t.id, tree, opts.hash);
  t.start = now();
  if (const char* c = std::getenv("BRAID_TEST_CRASH_AFTER")) t.crash_after = std::strtoull(c, nullptr, 10);
  if (opts.progress) t.progress = std::make_unique<ProgressLine>();
  // What each lane carried before this transfer (a lane that opens later starts from zero).
  for (const auto& [lid, l] : lanes_) t.at_start[lid] = l->counters();
  log_.write("status", {{"status", "offering"}, {"transfer", t.id}, {"files", tree.file_count},
                        {"bytes", tree.total_bytes}});
  drain_locked();
  bool sending_logged = false;
  auto last_draw = std::chrono::steady_clock::now();
  while (!t.outcome) {
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    if (auto to = machine_->poll_timeout()) wake = std::min(wake, epoch_ + std::chrono::nanoseconds(to->ns()));
    cv_.wait_until(lock, wake, [&] { return t.outcome || !checks_.empty() || !closed_.empty(); });
    while (!checks_.empty()) {
      // Resume: the receiver's held ranges are checked against the source
      // (read and hashed) off the lock; the lanes wait for the answer.
      session::CheckHeld c = std::move(checks_.front());
      checks_.pop_front();
      lock.unlock();
      const auto began = std::chrono::steady_clock::now();
      const HeldCheck check = check_held_ranges(
          c.held, opts.hash, tree.total_bytes, opts.chunk_size,
          [&](uint64_t off, uint64_t n, uint8_t* dst, std::string& error) { return t.source->read(off, n, dst, error); });
      std::vector<wire::HeldRange> matched;
      for (size_t i = 0; i < check.matched.size(); ++i)
        matched.push_back({check.matched[i].offset.count(), check.matched[i].length.count(), check.matched_hash[i]});
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      lock.lock();
      machine_->handle_held_checked(c.transfer, matched, check.rejected_bytes, now());
      log_.write("resume", {{"transfer", t.id},
                            {"held_ranges", c.held.size()},
                            {"resumed_bytes", machine_->resumed_bytes()},
                            {"rejected_ranges", check.rejected},
                            {"rejected_bytes", machine_->resume_rejected_bytes()},
                            {"check_seconds", seconds}});
      drain_locked();
    }
    if (!closed_.empty()) {
      lock.unlock();
      bury_closed_lanes();
      lock.lock();
    }
    machine_->handle_timeout(now());
    drain_locked();
    if (!sending_logged && machine_->scheduler()) {
      log_.write("status", {{"status", "sending"}, {"transfer", t.id}});
      sending_logged = true;
    }
    log_sample_locked();
    if (t.progress && machine_->scheduler() && std::chrono::steady_clock::now() - last_draw > std::chrono::milliseconds(200)) {
      draw_progress_locked(false);
      last_draw = std::chrono::steady_clock::now();
    }
  }
  const session::TransferOutcome o = *t.outcome;
  TransferOutcome out;
  if (o.end == session::TransferOutcome::End::refused) {
    log_.write("status", {{"status", "refused"}, {"reason", wire::refuse_reason_name(o.refusal)},
                          {"message", json_safe(o.message)}});
    out = {exit_code_for_refusal(o.refusal), "the receiver refused the transfer: " + o.message, {}};
    active_.reset();
    return out;
  }
  if (t.progress && machine_->scheduler()) draw_progress_locked(true);
  if (machine_->scheduler()) {
    out.report = build_report_locked(tree);
    out.report.policy = opts.policy;
    const Time end = machine_->all_acked_at() != Time::never() ? machine_->all_acked_at() : t.ended_at;
    out.report.seconds = (end - t.start).to_seconds();
    out.report.rate_bytes_per_sec =
        out.report.seconds > 0
            ? static_cast<double>(out.report.bytes - std::min(out.report.bytes, out.report.resumed_bytes)) / out.report.seconds
            : 0;
  }
  switch (o.end) {
    case session::TransferOutcome::End::result:
      out.exit_code = exit_code_for_result(o.result);
      out.message = o.verified() ? "every file arrived and verified" : "the receiver reports: " + o.message;
      out.report.verified = o.verified();
      out.report.status = wire::result_status_name(o.result);
      break;
    case session::TransferOutcome::End::peer_error:
      out.exit_code = kExitFailure;
      out.message = o.message;
      out.report.status = "peer_error";
      break;
    case session::TransferOutcome::End::bad_piece:
      out.exit_code = kExitVerifyFailed;
      out.message = o.message;
      out.report.status = "failed";
      break;
    case session::TransferOutcome::End::read_failed:
    case session::TransferOutcome::End::stuck:
    case session::TransferOutcome::End::timed_out:
      out.exit_code = kExitFailure;
      out.message = o.message;
      out.report.status = "failed";
      break;
    default:
      out.exit_code = kExitLanesLost;
      out.message = o.message.empty() ? "every lane closed before the receiver confirmed the transfer" : o.message;
      out.report.status = "failed";
      break;
  }
  if (o.end == session::TransferOutcome::End::result && o.verified())
    log_.write("status", {{"status", "verifying"}, {"transfer", t.id}});
  log_.write("status", {{"status", out.exit_code == 0 ? "done" : "failed"}, {"transfer", t.id},
                        {"message", out.message}});
  active_.reset();
  return out;
}

void SenderSession::bury_closed_lanes() {
  std::vector<std::unique_ptr<DataLane>> dead;
  std::vector<std::thread> finished;
  {
    std::lock_guard lock(mu_);
    dead.swap(closed_);
    for (auto it = connectors_.begin(); it != connectors_.end();) {
      if (*it->done) {
        finished.push_back(std::move(it->thread));
        it = connectors_.erase(it);
      } else {
        ++it;
      }
    }
  }
  dead.clear();  // joins their threads; their last events take mu_
  for (auto& t : finished) t.join();
}

// BRAID_TEST_CRASH_AFTER=BYTES: the end-to-end tests interrupt a transfer the
// hardest way — the process dies (SIGKILL, no cleanup) once BYTES of this
// run were acked.
void SenderSession::crash_if_asked_locked() {
  if (!active_ || active_->crash_after == UINT64_MAX || !machine_->scheduler()) return;
  const uint64_t delivered = machine_->scheduler()->plan().delivered_bytes().count();
  if (delivered - machine_->resumed_bytes() < active_->crash_after) return;
  log_.write("test_crash", {{"transfer", active_->id}, {"delivered", delivered}});
  std::raise(SIGKILL);
}

void SenderSession::log_progress_locked() {
  const core::Scheduler* s = machine_->scheduler();
  if (!active_ || !s) return;
  Active& t = *active_;
  const uint64_t total = s->plan().total().count();
  const uint64_t done = s->plan().delivered_bytes().count();
  while (t.next_decile <= 10 && (total == 0 || done * 10 >= total * static_cast<uint64_t>(t.next_decile))) {
    nlohmann::json lanes = nlohmann::json::array();
    for (size_t i = 0; i < s->lane_count(); ++i) {
      const auto id = static_cast<core::LaneId>(i);
      lanes.push_back({{"lane", machine_->sched_lane(id).value_or(0)},
                       {"rate_bytes_per_sec", s->estimator(id).rate().bytes_per_second()},
                       {"bytes", s->stats(id).useful_bytes.count()},
                       {"alive", s->lane_alive(id)}});
    }
    log_.write("progress", {{"transfer", t.id}, {"percent", t.next_decile * 10}, {"bytes", done}, {"lanes", lanes}});
    ++t.next_decile;
  }
}

// What each lane's scheduler state and transport look like right now: a
// line per kSampleEvery, so rate collapses and stalls can be seen in time.
void SenderSession::log_sample_locked() {
  const core::Scheduler* s = machine_->scheduler();
  if (!log_.enabled() || !active_ || !s) return;
  Active& t = *active_;
  const Time n = now();
  if (n < t.next_sample) return;
  t.next_sample = n + kSampleEvery;
  nlohmann::json lanes = nlohmann::json::array();
  for (size_t i = 0; i < s->lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    const LaneNo no = machine_->sched_lane(id).value_or(0);
    nlohmann::json j = {{"lane", no},
                        {"alive", s->lane_alive(id)},
                        {"bytes", s->stats(id).acked_bytes.count()},
                        {"estimate", s->estimator(id).rate().bytes_per_second()},
                        {"rtt_ms", s->planning_rtt(id).to_millis()},
                        {"outstanding", s->outstanding(id).count()},
                        {"flights", s->active_flights(id)},
                        {"stalls", s->stats(id).stalls}};
    if (DataLane* l = lane_locked(no); l && s->lane_alive(id)) j.update(l->sample());
    lanes.push_back(std::move(j));
  }
  log_.write("sample", {{"transfer", t.id}, {"delivered", s->plan().delivered_bytes().count()}, {"lanes", lanes}});
}

void SenderSession::draw_progress_locked(bool final) {
  const core::Scheduler* s = machine_->scheduler();
  Active& t = *active_;
  ProgressLine::Snapshot snap;
  snap.total = s->plan().total().count();
  snap.done = s->plan().delivered_bytes().count();
  snap.resumed = machine_->resumed_bytes();
  snap.elapsed = (now() - t.start).to_seconds();
  for (size_t i = 0; i < s->lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    snap.lanes.push_back({machine_->sched_lane(id).value_or(0), s->estimator(id).rate().bytes_per_second(),
                          s->stats(id).useful_bytes.count(), s->lane_alive(id)});
  }
  t.progress->draw(snap, final);
}

TransferReport SenderSession::build_report_locked(const files::SourceTree& tree) {
  const core::Scheduler& s = *machine_->scheduler();
  Active& t = *active_;
  TransferReport r;
  r.role = "send";
  r.transfer_id = t.id;
  r.peer = peer_name_;
  r.hash = wire::hash_algo_name(t.source->hash());
  r.chunk_size = s.plan().chunk_size().count();
  r.files = tree.file_count;
  r.bytes = s.plan().delivered_bytes().count();
  r.resumed_bytes = machine_->resumed_bytes();
  r.resume_rejected_bytes = machine_->resume_rejected_bytes();
  r.stalls = s.total_stalls();
  r.duplicates = s.total_duplicates();
  r.abandoned = s.total_abandoned();
  // Shares of what this run sent: resumed bytes crossed no lane.
  const double total = static_cast<double>(std::max<uint64_t>(1, r.bytes - std::min(r.bytes, r.resumed_bytes)));
  std::map<LaneNo, session::Sender::LaneView> views;
  for (const auto& v : machine_->lanes()) views[v.id] = v;
  for (size_t i = 0; i < s.lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    const LaneNo no = machine_->sched_lane(id).value_or(0);
    const auto& st = s.stats(id);
    const auto& v = views[no];
    LaneReport l;
    l.lane_id = no;
    l.kind = session::lane_kind_name(v.traits.kind);
    l.bytes = st.useful_bytes.count();
    l.acked_bytes = st.acked_bytes.count();
    if (DataLane* lane = lane_locked(no)) {
      l.local = lane->local();
      l.remote = lane->remote();
      const DataLaneCounters c = lane->counters(), c0 = t.at_start.count(no) ? t.at_start[no] : DataLaneCounters{};
      l.wire_bytes = c.wire_bytes - c0.wire_bytes;
      l.rejected_frames = c.rejected_frames - c0.rejected_frames;
      lane->add_to_report(l);
    } else {
      l.local = v.path.local;
      l.remote = v.path.remote;
    }
    l.name = "lane" + std::to_string(no) + (l.kind == "udp" ? " udp " : " ") + l.local + "->" + l.remote;
    l.chunks = st.pieces;
    l.share = static_cast<double>(l.bytes) / total;
    const auto fs = t.first_send.find(no);
    if (fs != t.first_send.end() && st.acked_bytes.count() > 0 && st.last_ack > fs->second) {
      l.active_seconds = (st.last_ack - fs->second).to_seconds();
      l.rate_bytes_per_sec = st.acked_bytes.as_double() / l.active_seconds;
    }
    l.estimate_bytes_per_sec = s.estimator(id).rate().bytes_per_second();
    l.rtt_ms = s.estimator(id).srtt().to_millis();
    l.stalls = st.stalls;
    l.duplicates = st.duplicates;
    l.abandoned = st.abandoned;
    l.open_at_end = v.open && s.lane_alive(id);
    l.close_reason = v.close_reason;
    r.lanes.push_back(l);
  }
  std::sort(r.lanes.begin(), r.lanes.end(), [](const LaneReport& a, const LaneReport& b) { return a.lane_id < b.lane_id; });
  return r;
}

// ---- --background on TCP lanes ---------------------------------------------------------

void SenderSession::tcp_pacing_loop() {
  auto next = std::chrono::steady_clock::now();
  const auto every = std::chrono::nanoseconds(kTcpPacingEvery.ns());
  std::unique_lock lock(mu_);
  while (!closing_) {
    next += every;
    const auto now_tp = std::chrono::steady_clock::now();
    if (next < now_tp) next = now_tp;  // late (a busy machine): no catching up in a burst
    cv_.wait_until(lock, next, [&] { return closing_; });
    if (closing_) return;
    // TCP_INFO and setsockopt only: cheap enough to do under the lock, and
    // the lanes cannot be destroyed meanwhile.
    const Time n = now();
    for (const auto& v : machine_->lanes())
      if (v.open && v.data)
        if (DataLane* l = lane_locked(v.id)) l->pace(n);
  }
}

void SenderSession::close() {
  std::vector<Connector> connectors;
  {
    std::unique_lock lock(mu_);
    if (closing_ || !machine_) return;
    closing_ = true;
    // bye goes on the control lane; the receiver answers it by closing its
    // lanes. Wait a little for that (a dead lane never answers), then close
    // whatever is left: the result never waits on a dead lane.
    machine_->close(now());
    std::vector<session::CloseLane> closes;
    while (auto a = machine_->poll_action()) {
      if (auto* m = std::get_if<session::SendMessage>(&*a)) act(*m);
      if (auto* c = std::get_if<session::CloseLane>(&*a)) closes.push_back(*c);
    }
    cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return alive_.empty(); });
    for (auto& c : closes) act(c);
    for (auto& [id, l] : lanes_) {
      l->close("session closed");
      closed_.push_back(std::move(l));
    }
    lanes_.clear();
    cv_.notify_all();
    connectors.swap(connectors_);
  }
  if (pacer_.joinable()) pacer_.join();
  for (auto& c : connectors) c.thread.join();
  bury_closed_lanes();
  log_.write("status", {{"status", "closed"}});
}

}  // namespace braid::transfer
