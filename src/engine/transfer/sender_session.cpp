#include "engine/transfer/sender_session.hpp"

#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
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
#include "engine/lanes/child_stream.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/lanes/unix_socket.hpp"
#include "engine/transfer/code_text.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/resume_check.hpp"
#include "engine/transfer/stream_lane.hpp"
#include "engine/transfer/udp_data_lane.hpp"
#include "engine/transfer/lane_paths.hpp"
#include "engine/transfer/sender_session_active.hpp"
#include "engine/lanes/host_network.hpp"
#include "engine/transfer/source_reader.hpp"

namespace braid::transfer {

namespace {
int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Where a lane leaves: the interface it is bound to, else the one that
/// holds its local address, else that address. A path's figures are filed
/// under it, so a lane bound by --lane's address and lane 0, which is not
/// bound, find the same ones.
std::string leaves_by(const std::vector<paths::Interface>& interfaces, const std::string& local_host,
                      const std::string& interface) {
  if (!interface.empty()) return interface;
  for (const auto& i : interfaces)
    if (std::any_of(i.addresses.begin(), i.addresses.end(),
                    [&](const paths::InterfaceAddress& a) { return a.text == local_host; }))
      return i.name;
  return local_host;
}

/// TCP lanes that leave by one interface share its uplink: one delay group
/// (transport::TcpGroupCap), named by leaves_by. None (empty) on loopback:
/// no queue there to keep short, and its delay is the CPU's scheduling — a
/// busy host's milliseconds would read as a queue.
std::string bottleneck_key(const std::vector<paths::Interface>& interfaces, const std::string& local_host,
                           const std::string& interface) {
  const std::string by = leaves_by(interfaces, local_host, interface);
  for (const auto& i : interfaces)
    if (i.name == by) return i.loopback ? std::string() : i.name;
  if (by == local_host && (local_host.rfind("127.", 0) == 0 || local_host == "::1")) return {};
  return by;
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
    if (!c.code) return Failure{kExitUsage, "bad pairing code: " + c.error};
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
  security::SessionOptions so;
  so.role = security::Role::client;
  so.pairing_code = code ? &*code : nullptr;
  so.io_timeout_ms = 30'000;
  so.addressed_label = opts.peer_label;
  so.pin_label = opts.pin_label;
  // Lane 0 as the machine sees it: its RTT so far (the TCP and TLS
  // handshakes), the transport for further lanes, its path. Known before
  // the receiver's first frame, so the machine can start (and offer) then.
  const int fd0 = fd.get();
  const lanes::Endpoint local = lanes::local_endpoint_of(fd0);
  bool have_rtt = false, udp_default = opts.transport == Transport::udp;
  uint32_t rtt_us = 0, retrans = 0;
  std::vector<paths::Interface> interfaces;
  session::PathSpec path0{session::LaneKind::tcp, "", remote.str()};
  const auto look_at_lane0 = [&] {
    // `--transport auto`: UDP lanes when the handshake already showed a long
    // RTT or a retransmission (where TCP's loss response costs most), TCP lanes
    // otherwise (loopback, LAN: TCP is cheaper per byte there).
    have_rtt = lanes::tcp_path_info(fd0, rtt_us, retrans);
    if (opts.transport == Transport::automatic) {
      // Loopback is never a long or lossy path, whatever a busy host's
      // scheduler did to the handshake's RTT sample.
      const bool loopback = lanes::peer_endpoint_of(fd0).is_loopback();
      if (have_rtt && !loopback) udp_default = rtt_us >= 5000 || retrans > 0;
      log.write("transport", {{"choice", udp_default ? "udp" : "tcp"}, {"rtt_us", rtt_us}, {"retransmits", retrans}});
    }
    // Watch before the first look, so that no change falls between the two.
    if (opts.lanes.empty()) {
      std::string watch_error;
      s->watch_fd_ = lanes::open_network_watch(watch_error);
      if (s->watch_fd_.valid()) {
        s->watch_wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (!s->watch_wake_.valid()) {
          watch_error = std::string("eventfd: ") + std::strerror(errno);
          s->watch_fd_.reset();
        }
      }
      if (!s->watch_fd_.valid()) log.write("network_watch_failed", {{"reason", watch_error}});
    }
    interfaces = lanes::read_interfaces();
    // Should lane 0 die, a lane opens again on its path (any local address).
    // It is a backup path if it left through a --backup interface.
    for (const auto& i : interfaces)
      for (const auto& x : i.addresses)
        if (x.text == local.host()) {
          path0.interface = i.name;  // unbound, but that is where it leaves (--metered counts it)
          path0.backup = std::find(opts.backup.begin(), opts.backup.end(), i.name) != opts.backup.end();
        }
  };
  nlohmann::json lane0 = {{"lane", 0}, {"local", local.str()}, {"remote", remote.str()}};
  if (!opts.tcp_cc.empty()) {
    // Data flows this way, so the sender's controller is the one that counts.
    if (lanes::set_congestion_control(fd0, opts.tcp_cc)) lane0["cc"] = opts.tcp_cc;
    else lane0["cc_error"] = "the kernel refused " + opts.tcp_cc + ": " + std::strerror(errno);
  }
  session::SenderConfig cfg;
  cfg.rate_limit = opts.rate_limit;
  cfg.metered = opts.metered;
  if (opts.grow_streams) cfg.max_streams = kMaxStreamsPerPath;
  cfg.max_lanes = opts.max_lanes;
  cfg.join_timeout = Duration::millis(std::min(opts.connect_timeout_ms, 3000));
  cfg.root_hash = files::root_hash_of_ranges;
  // Lane 0's traits, with what its path carried last time for this peer
  // (connect_lane says why); `peer`: the receiver's key fingerprint.
  const auto traits0 = [&](const std::string& peer) {
    auto t = session::LaneTraits::tcp(have_rtt && rtt_us > 0 ? std::optional(Duration::micros(rtt_us)) : std::nullopt);
    t.rate_hint = s->known_tcp_rate_locked(peer, 0, leaves_by(interfaces, local.host(), path0.interface),
                                           remote.host());
    return t;
  };
  s->background_ = opts.cc == "background";
  if (opts.first_tree && opts.first_options) {
    // The first offer in TLS's last flight (security::SessionOptions::early_frames):
    // lane 0's frames start right behind our HELLO, and the machine starts here.
    so.early_frames = [&](const security::Session& tls) -> security::Status {
      // Only to a receiver whose protocol is known from an earlier session:
      // the offer's checks, its compression and the lanes' joins follow it
      // (a receiver met before this binary remembered protocols answers
      // the offer a round trip later, once, as an unknown one always does).
      const auto spoken = s->path_memory_.protocol(tls.peer().fingerprint.to_string());
      if (!spoken) {
        log.write("offer_after_addresses", {{"reason", "the receiver's protocol is not known yet"}});
        return {};
      }
      cfg.peer = s->peer_protocol_ = *spoken;
      s->session_id_ = tls.session_id();
      s->secret_ = tls.lane_secret();
      std::string e;
      s->early_link_ = lanes::LaneLink::create(std::move(fd), s->session_id_, 0, s->secret_, security::Role::client, e);
      if (!s->early_link_) return security::make_error(security::Errc::io_error, e);
      s->early_link_->set_faults(opts.faults.frames);
      look_at_lane0();
      std::lock_guard lock(s->mu_);
      s->machine_ = std::make_unique<session::Sender>(cfg);
      s->machine_->start(traits0(tls.peer().fingerprint.to_string()), path0, s->now());
      if (!opts.lanes.empty() || udp_default) {
        // Lane 0's remote is the one address of the receiver's known yet.
        LanePlan early{opts.lanes, opts.streams, udp_default, local, remote, {remote.str()}, kDefaultPort, interfaces,
                       {},         opts.backup,  opts.avoid};
        std::string route_error;
        if (opts.lanes.empty()) early.routes = lanes::read_routes(route_error);
        if (route_error.empty()) s->open_early_udp_lanes_locked(early, tls.peer().fingerprint.to_string());
      }
      if (!s->begin_transfer_locked(*opts.first_tree, *opts.first_options)) {
        s->offered_early_ = true;
        log.write("status", {{"status", "offered_early"}, {"transfer", s->active_->id}});
      }
      s->drain_locked();  // the offer's frames, on early_link_
      return {};
    };
  }
  s->path_memory_ = PathMemory::load(s->host_->dir);
  auto session = security::Session::establish(fd0, *s->host_->tls, *s->host_->identity, known.value(), so);
  if (!session) {
    log.write("status", {{"status", "refused"}, {"reason", session.error().message}});
    std::string msg = session.error().message;
    // Named as such: "127.0.0.1:8080 is not a braid receiver (it answered like HTTP)".
    if (session.error().code == security::Errc::not_braid)
      msg = remote.str() + " is not a braid receiver (" + msg + ")";
    else if (session.error().code == security::Errc::connection_closed &&
             msg.find("during the TLS 1.3 handshake") != std::string::npos)
      msg = remote.str() + " closed the connection without answering braid's handshake (not a braid receiver, or one "
            "too busy to answer)";
    if (code_looked_mistyped && session.error().code == security::Errc::pairing_failed)
      msg += " (the code given looks mistyped: its check symbol does not match)";
    return Failure{exit_code_for(session.error().code), msg};
  }
  s->peer_name_ = session.value().peer().name;
  s->peer_ = session.value().peer();
  s->session_id_ = session.value().session_id();
  s->secret_ = session.value().lane_secret();
  log.write("status", {{"status", "authenticated"},
                       {"peer", s->peer_name_},
                       {"fingerprint", s->peer_.fingerprint.to_string()},
                       {"how", session.value().peer().how == security::PeerAuth::paired ? "paired" : "pinned"}});

  // From here on lane 0 carries sealed frames; the TLS session's work is done.
  std::unique_ptr<lanes::LaneLink> link = std::move(s->early_link_);
  if (!link) {
    look_at_lane0();
    link = lanes::LaneLink::create(std::move(fd), s->session_id_, 0, s->secret_, security::Role::client, error);
    if (!link) return Failure{kExitFailure, error};
    link->set_faults(opts.faults.frames);
  }
  lanes::Incoming first = link->read();
  wire::Addresses addrs;
  if (first.status != lanes::ReadStatus::frame || first.type != wire::FrameType::addresses ||
      !wire::decode(first.payload, addrs))
    return Failure{kExitFailure, "the receiver did not send its addresses: " + first.reason};
  // What the receiver speaks (protocol 8 says it): the machine's offer
  // checks and its lanes' joins follow it. An offer made in TLS's last
  // flight went on what it spoke last time; the machine hears the truth now.
  const wire::PeerProtocol remembered = s->peer_protocol_;
  s->peer_protocol_ = wire::peer_protocol(addrs);
  log.write("peer_protocol", {{"version", s->peer_protocol_.version}, {"said", s->peer_protocol_.said}});
  cfg.peer = s->peer_protocol_;
  // Heard by the machine once lane 0 can carry what that sends (below).
  const bool heard_other = s->machine_ && remembered != s->peer_protocol_;
  if (heard_other)
    log.write("peer_protocol_changed", {{"remembered", remembered.text()}, {"now", s->peer_protocol_.text()}});
  if (s->path_memory_.remember_protocol(s->peer_.fingerprint.to_string(), s->peer_protocol_, unix_now()))
    if (auto e = s->path_memory_.save(s->host_->dir); !e.empty()) log.write("path_figures_unsaved", {{"reason", e}});

  LanePlan plan{opts.lanes, opts.streams, udp_default, local, remote, addrs.endpoints, kDefaultPort, {}, {},
                opts.backup, opts.avoid};
  plan.interfaces = interfaces;
  if (opts.lanes.empty()) {
    std::string route_error;
    plan.routes = lanes::read_routes(route_error);
    if (!route_error.empty()) log.write("routes_unread", {{"reason", route_error}});
  }
  std::vector<std::pair<std::string, std::string>> skipped;
  std::vector<session::PathSpec> paths;
  std::vector<LanePath> planned = plan_lane_paths(plan, skipped);
  // The lanes asked in TLS's last flight take the place of their paths in
  // the plan: the same path, else one to the same receiver address (the
  // plan may leave the local end to the kernel where the early ask bound it).
  std::vector<bool> asked(planned.size(), false);
  auto& early = s->early_udp_paths_;
  for (const bool exact : {true, false})
    std::erase_if(early, [&](const session::PathSpec& e) {
      for (size_t i = 0; i < planned.size(); ++i) {
        const session::PathSpec& p = planned[i].spec;
        if (asked[i] || p.kind != e.kind || p.remote != e.remote || (exact && p.local != e.local)) continue;
        asked[i] = true;
        return true;
      }
      return false;
    });
  for (const auto& e : early)  // none the plan has: the lane stays, as one of lane 0's path
    log.write("udp_open_early_unplanned", {{"path", e.local + " -> " + e.remote}});
  early.clear();
  for (size_t i = 0; i < planned.size(); ++i) {
    if (asked[i]) continue;
    paths.push_back(planned[i].spec);
    s->paths_[path_key(planned[i].spec)] = std::move(planned[i]);
  }
  for (const auto& [spec, why] : skipped) log.write("lane_skipped", {{"spec", spec}, {"reason", why}});
  {
    std::lock_guard lock(s->mu_);
    const auto lane0_traits = traits0(s->peer_.fingerprint.to_string());
    if (!s->machine_) {
      s->machine_ = std::make_unique<session::Sender>(cfg);
      s->machine_->start(lane0_traits, path0, s->now());
    }
    if (lane0_traits.rate_hint) lane0["known_rate_mbit"] = lane0_traits.rate_hint->bits_per_second() / 1e6;
    StreamLane::Options lo{lane0_traits, local.str(), remote.str(), true, nullptr, {},
                           bottleneck_key(plan.interfaces, local.host(), {})};
    s->lanes_[0] = std::make_unique<StreamLane>(std::move(link), lo, static_cast<DataLaneEvents&>(*s));
    s->alive_.insert(0);
    log.write("lane_open", lane0);
    if (heard_other) s->hear_peer_protocol_locked();
    s->plan_ = plan;  // under mu_: a peer's addresses may come as soon as lane 0 reads
    LanePath p0;
    p0.spec = path0;
    p0.remote = remote;
    s->paths_[path_key(path0)] = p0;
    s->machine_->add_paths(paths, s->now());
    s->drain_locked();
  }
  // Lanes open in the background and join the transfer as they come: the
  // offer does not wait for them. Its answer takes a round trip, about what
  // a lane takes to connect, so they are usually there for the first pieces
  // anyway, and a path that does not answer costs nothing at the start.
  // TCP lanes run under a pacing cap: --background's scavenger, else the
  // coupled low-delay cap (unless --latency-target 0).
  if (s->background_ || opts.latency_target > Duration::zero())
    s->pacer_ = std::thread([p = s.get()] { p->tcp_pacing_loop(); });
  if (s->watch_fd_.valid()) s->watcher_ = std::thread([p = s.get()] { p->watch_network(); });
  return s;
}

// ---- paths that come and go --------------------------------------------------------


namespace {
/// Changes come in bursts (a link going down drops its addresses and
/// routes one message at a time): plan once the burst is quiet this long.
/// Short: until then the lanes of a dead link hold their share of a
/// --rate-limit (50 ms cost 1-2 % of the second in which a link died).
constexpr auto kNetworkSettle = std::chrono::milliseconds(15);
}  // namespace

void SenderSession::wake_watcher() {
  if (!watch_wake_.valid()) return;
  const uint64_t one = 1;
  (void)!::write(watch_wake_.get(), &one, sizeof one);
}

void SenderSession::watch_network() {
  using SteadyClock = std::chrono::steady_clock;
  constexpr auto kNone = SteadyClock::time_point::max();
  const int fd = watch_fd_.get();
  SteadyClock::time_point due = kNone, burst_start = kNone;  // a plan is due then; the burst began then
  for (;;) {
    bool asked = false;
    {
      std::lock_guard lock(mu_);
      if (closing_) return;
      asked = std::exchange(replan_requested_, false);
    }
    if (asked) replan_paths();
    // Woken by the host's network, a replan asked for, or close(): the
    // session's exit never waits for a timeout here (a 100 ms poll held
    // every send's exit by 50 ms on average: 100,000 small files over
    // loopback took 0.72 s, 7 % of it this wait).
    pollfd p[2] = {{fd, POLLIN, 0}, {watch_wake_.get(), POLLIN, 0}};
    int wait = -1;
    if (due != kNone) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due - SteadyClock::now());
      wait = static_cast<int>(std::max<int64_t>(left.count(), 0));
    }
    const int ready = ::poll(p, 2, wait);
    if (ready > 0 && (p[1].revents & POLLIN)) {
      uint64_t v;
      (void)!::read(watch_wake_.get(), &v, sizeof v);
    }
    if (ready > 0 && (p[0].revents & POLLIN) && lanes::drain_network_watch(fd)) {
      // Plan once the burst is quiet for kNetworkSettle, but within 0.5 s of its start.
      const auto t = SteadyClock::now();
      if (burst_start == kNone) burst_start = t;
      due = std::min(t + kNetworkSettle, burst_start + std::chrono::milliseconds(500));
    }
    if (due != kNone && SteadyClock::now() >= due) {
      due = kNone;
      burst_start = kNone;
      replan_paths();
    }
  }
}

void SenderSession::replan_paths() {
  LanePlan plan;
  {
    std::lock_guard lock(mu_);
    if (closing_ || !machine_) return;
    plan = plan_;
    plan.lane0_alive = false;
    for (const auto& v : machine_->lanes()) plan.lane0_alive = plan.lane0_alive || (v.id == 0 && v.open);
  }
  plan.interfaces = lanes::read_interfaces();
  std::string route_error;
  plan.routes = lanes::read_routes(route_error);
  if (plan.interfaces.empty() || !route_error.empty()) {
    // A host we could not read (out of fds, say) is not a host without
    // paths: nothing is closed on its word.
    log_.write("network_unread", {{"reason", plan.interfaces.empty() ? "no interfaces read" : route_error}});
    return;
  }
  std::vector<std::pair<std::string, std::string>> skipped;
  std::vector<LanePath> planned = plan_lane_paths(plan, skipped);
  std::vector<session::PathSpec> specs;
  nlohmann::json shown = nlohmann::json::array();
  for (const auto& p : planned) {
    specs.push_back(p.spec);
    shown.push_back((p.interface.empty() ? std::string() : p.interface + " ") + p.spec.local + " -> " + p.spec.remote);
  }
  // Lane 0 is not bound, but its address is: if no interface that is up
  // holds it any more, nothing it sends can be answered.
  bool lane0_present = plan.first_local.is_loopback();
  for (const auto& i : plan.interfaces)
    for (const auto& a : i.addresses) lane0_present = lane0_present || (i.up && a.text == plan.first_local.host());
  std::lock_guard lock(mu_);
  if (closing_ || !machine_) return;
  // The same plan as last time (netlink is chatty: Wi-Fi scans, address
  // lifetimes, other programs' veths): nothing to tell the machine.
  std::string key = lane0_present ? "1" : "0";
  for (const auto& p : specs) key += "|" + p.local + ">" + p.remote + (p.backup ? "b" : "");
  if (key == last_plan_) return;
  last_plan_ = key;
  for (auto& p : planned) paths_[path_key(p.spec)] = std::move(p);
  log_.write("network_changed", {{"paths", shown}, {"lane0_path", lane0_present}});
  machine_->set_paths(specs, now(), lane0_present);
  drain_locked();
}

size_t SenderSession::live_lanes() const {
  std::lock_guard lock(mu_);
  return machine_ ? machine_->open_lanes() : 0;
}

void SenderSession::wait_for_lanes(std::chrono::milliseconds max) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, max, [&] { return !machine_ || machine_->opening_lanes() == 0; });
}

DataLane* SenderSession::lane_locked(session::LaneNo id) {
  auto it = lanes_.find(id);
  return it == lanes_.end() ? nullptr : it->second.get();
}

// ---- the machine's actions ----------------------------------------------------------

// Every piece brings the lane threads here three or four times (started,
// hashed, written, acked). Waking the session's loop each time cost the
// sender ~7 % of its CPU on a loopback lane (the futex wake in the writer,
// the loop's wake-up and its fight for mu_), mostly to find nothing to do.
// So the waiters are woken only for what they wait on: an action beyond a
// lane's own work (an outcome, a resume check, a closed or opened lane, a
// note), a change in the lanes still opening, or a timer due before the
// loop's planned wake.
void SenderSession::drain_locked() {
  bool wake = false;
  while (auto a = machine_->poll_action()) {
    wake = wake || !(std::holds_alternative<session::SendPiece>(*a) || std::holds_alternative<session::SendMessage>(*a) ||
                     std::holds_alternative<session::ReleasePiece>(*a) ||
                     std::holds_alternative<session::CancelPiece>(*a) || std::holds_alternative<session::SetLaneRate>(*a));
    std::visit([this](auto& x) { act(x); }, *a);
  }
  if (const size_t opening = machine_->opening_lanes(); opening != opening_seen_) {
    opening_seen_ = opening;
    wake = true;
  }
  if (!wake)
    if (const auto to = machine_->poll_timeout()) wake = epoch_ + std::chrono::nanoseconds(to->ns()) < planned_wake_;
  // Once: the walk takes mu_ back after this drain's caller lets it go.
  if (walk_waiting_ && !machine_->walk_should_wait(walk_waiting_->walked, walk_waiting_->window)) {
    walk_waiting_.reset();
    wake = true;
  }
  if (wake) cv_.notify_all();
}

void SenderSession::act(session::SendMessage& a) {
  if (DataLane* l = lane_locked(a.lane)) return l->send_message(a.msg);
  if (a.lane == 0 && early_link_) {
    // The early offer, during the TLS handshake: lane 0 has no threads yet.
    const session::Encoded e = session::encode(a.msg);
    (void)early_link_->send(e.type, e.payload);  // a failure shows as the handshake's
  }
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
  LanePath where;
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    where = paths_.at(path_key(path));
  }
  std::string error;
  std::unique_ptr<lanes::LaneLink> link;
  std::shared_ptr<void> owner;
  if (!where.command.empty()) {
    // A byte-stream lane: a child's stdin/stdout or its terminal.
    auto child = lanes::spawn_child_stream(where.command, where.pty, error);
    if (child.fd.valid())
      link = lanes::LaneLink::create(std::move(child.fd), session_id_, id, secret_, security::Role::client, error);
    owner = child.child;
  } else if (!where.unix_path.empty()) {
    // A byte-stream lane over a Unix-domain socket.
    auto fd = lanes::connect_unix(where.unix_path, error);
    if (fd.valid()) link = lanes::LaneLink::create(std::move(fd), session_id_, id, secret_, security::Role::client, error);
  } else {
    int err = 0;
    // Extra lanes wait less than the first (≤ 3 s): an advertised address
    // that does not route (a container bridge, say) costs only its lane.
    auto fd = lanes::connect_tcp(where.remote, where.local ? &*where.local : nullptr,
                                 std::min(opts_.connect_timeout_ms, 3000), error, err, where.interface);
    if (fd.valid()) link = lanes::LaneLink::create(std::move(fd), session_id_, id, secret_, security::Role::client, error);
  }
  std::lock_guard lock(mu_);
  if (closing_) return;
  if (!link) {
    machine_->handle_lane_failed(id, error, false, now());
    return drain_locked();
  }
  link->set_faults(opts_.faults.frames);
  if (!machine_->expects_connect(id)) return;  // given up meanwhile (its join timed out): the link closes here
  const bool tcp = where.command.empty() && where.unix_path.empty();
  uint32_t rtt_us = 0, retrans = 0;
  const bool rtt = tcp && lanes::tcp_path_info(link->fd(), rtt_us, retrans) && rtt_us > 0;
  const auto hint = rtt ? std::optional(Duration::micros(rtt_us)) : std::nullopt;
  auto traits = tcp ? session::LaneTraits::tcp(hint) : session::LaneTraits::stream();
  if (tcp)
    traits.rate_hint = known_tcp_rate_locked(
        peer_.fingerprint.to_string(), id,
        leaves_by(plan_.interfaces, lanes::local_endpoint_of(link->fd()).host(), where.interface), where.remote.host());
  const std::string local = tcp                        ? lanes::local_endpoint_of(link->fd()).str()
                            : !where.unix_path.empty() ? std::string("unix")
                                                       : std::string(where.pty ? "pty" : "exec");
  const std::string remote = tcp ? where.remote.str() : !where.unix_path.empty() ? "unix:" + where.unix_path : where.command;
  nlohmann::json fields = {{"lane", id}, {"local", local}, {"remote", remote}};
  if (!where.interface.empty()) fields["interface"] = where.interface;
  if (traits.rate_hint) fields["known_rate_mbit"] = traits.rate_hint->bits_per_second() / 1e6;
  if (!tcp) fields["kind"] = "stream";
  if (tcp && !opts_.tcp_cc.empty()) {
    // Data flows this way, so the sender's controller is the one that counts.
    if (lanes::set_congestion_control(link->fd(), opts_.tcp_cc)) fields["cc"] = opts_.tcp_cc;
    else fields["cc_error"] = "the kernel refused " + opts_.tcp_cc + ": " + std::strerror(errno);
  }
  const std::string bottleneck =
      tcp ? bottleneck_key(plan_.interfaces, lanes::local_endpoint_of(link->fd()).host(), where.interface) : std::string();
  StreamLane::Options lo{traits, local, remote, tcp, owner, where.interface, bottleneck};
  lanes_[id] = std::make_unique<StreamLane>(std::move(link), lo, static_cast<DataLaneEvents&>(*this));
  alive_.insert(id);
  pending_open_[id] = std::move(fields);
  machine_->handle_lane_connected(id, traits, now());
  drain_locked();
}

void SenderSession::open_early_udp_lanes_locked(const LanePlan& plan, const std::string& peer) {
  std::vector<std::pair<std::string, std::string>> skipped;
  std::vector<LanePath> early;
  for (auto& p : plan_lane_paths(plan, skipped)) {
    // In the plan's order, so lanes are numbered as they would be anyway:
    // --lane specs name their receiver address. A discovered path knows
    // only lane 0's, which the planner puts first: its first lane alone, as
    // the full plan goes round every path before any gets its second (a
    // --max-lanes cap must still leave each path a lane).
    if (p.spec.kind != session::LaneKind::udp) break;
    if (plan.specs.empty()) {
      if (!p.local || !p.local->same_host(plan.first_local) || p.remote.str() != plan.first_remote.str()) break;
      const std::string key =
          PathMemory::udp_path_key(leaves_by(plan.interfaces, p.local->host(), p.interface), p.remote.host());
      if (!path_memory_.hint(peer, key, unix_now())) break;
      early.push_back(std::move(p));
      break;
    }
    early.push_back(std::move(p));
  }
  std::vector<session::PathSpec> specs;
  for (auto& p : early) {
    log_.write("udp_open_early", {{"path", p.spec.local + " -> " + p.spec.remote}, {"interface", p.interface}});
    specs.push_back(p.spec);
    early_udp_paths_.push_back(p.spec);
    paths_[path_key(p.spec)] = std::move(p);
  }
  if (!specs.empty()) machine_->add_paths(specs, now());
}

void SenderSession::start_udp_lane(session::LaneNo id, const session::PathSpec& path, const std::string& address) {
  const LanePath& where = paths_.at(path_key(path));
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
    cfg.fault = opts_.faults.udp;
    cfg.cc_seed = id;
    cfg.socket.device = where.interface;
    // Known peer, known path: start from what it carried last time.
    const std::string key = PathMemory::udp_path_key(
        leaves_by(plan_.interfaces, where.local ? where.local->host() : std::string("any"), where.interface),
        where.remote.host());
    cfg.start = path_memory_.hint(peer_.fingerprint.to_string(), key, unix_now());
    figure_keys_[id] = key;
    // Streams on one path measure their queue against one base RTT.
    auto& base = shared_bases_[key];
    if (!base) base = std::make_shared<transport::SharedBaseRtt>();
    cfg.shared_base = base;
    // ... and leave startup together: several startups on one bottleneck fill its buffer.
    auto& startup = shared_startups_[key];
    if (!startup) startup = std::make_shared<transport::SharedStartup>();
    cfg.shared_startup = startup;
  }
  std::unique_ptr<UdpDataLane> lane;
  if (error.empty()) lane = UdpDataLane::start(cfg, static_cast<DataLaneEvents&>(*this), error, piece_buffers_);
  if (!lane) {
    machine_->handle_lane_failed(id, error, false, now());
    return;  // the caller drains
  }
  if (auto k = opts_.faults.udp_kill_after.find(id); k != opts_.faults.udp_kill_after.end()) lane->kill_after(k->second);
  pending_open_[id] = {{"lane", id},     {"kind", "udp"},
                       {"local", lane->local()}, {"remote", address},
                       {"packet_size", lane->packet_size()}, {"cc", cfg.cc}};
  auto traits = lane->traits();
  if (cfg.start) traits.rate_hint = cfg.start->rate;  // the scheduler plans with what the controller starts from
  lanes_[id] = std::move(lane);
  alive_.insert(id);
  machine_->handle_lane_connected(id, traits, now());
}

void SenderSession::act(session::CloseLane& a) {
  auto it = lanes_.find(a.lane);
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
    log_.write("lane_open", fields);
    return;
  }
  if (n.event == "peer_addresses" && opts_.lanes.empty()) {
    plan_.advertised = machine_->peer_addresses();
    replan_requested_ = true;  // the watcher plans again (outside mu_: it reads the host's network)
    wake_watcher();
  }
  nlohmann::json f = {{"lane", n.lane}, {"reason", n.detail}};
  if (n.event == "ordered_lane") f = {{"lane", n.lane}, {"headers_resent", n.count}};
  log_.write(n.event, f);
}

// ---- lane events (their threads) ----------------------------------------------------

void SenderSession::on_message(LaneNo lane, const session::ToSender& msg) {
  std::lock_guard lock(mu_);
  if (!machine_) return;
  const Time at = now();
  machine_->handle_message(lane, msg, at);
  if (std::holds_alternative<wire::Ack>(msg) || std::holds_alternative<wire::LaneAck>(msg)) log_progress_locked();
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
  log_progress_locked();
  drain_locked();
}

void SenderSession::on_transport_rate(LaneNo lane, Rate rate) {
  std::lock_guard lock(mu_);
  if (machine_) machine_->handle_transport_rate(lane, rate, now());
}

void SenderSession::on_read_failed(LaneNo, uint32_t transfer, const std::string& reason) {
  std::lock_guard lock(mu_);
  // A stale piece of a transfer that ended (its reader retired, run_transfer)
  // says nothing about the one running now, if any.
  if (!machine_ || !active_ || active_->id != transfer) return;
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
    plan_wake_locked(std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
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
  return run_transfer(tree, opts, {});
}

TransferOutcome SenderSession::send_walking(const std::vector<std::string>& paths, const files::ScanOptions& scan,
                                            files::SourceTree& tree, files::ScanResult& walk,
                                            const TransferOptions& opts) {
  bool stopped = false;
  const auto began = std::chrono::steady_clock::now();
  TransferOutcome out = run_transfer(tree, opts, [&] {
    // Each batch joins `tree` under mu_, where the machine reads it in place.
    walk = files::scan_sources_streamed(paths, scan, kWalkBatch, [&](files::SourceTree&& batch, bool last) {
      if (opts.walk_faults) opts.walk_faults->before_batch(tree.size(), last);  // only this thread adds to it
      std::unique_lock lock(mu_);
      if (!active_ || active_->outcome) return !(stopped = true);
      // A window, not the tree: the entries the transfer reads no more go,
      // and the walk waits while too many are still needed (drain_locked
      // wakes it when the acks let it go on; the timeout is a backstop).
      for (;;) {
        active_->files->release_before(tree, machine_->entries_needed_from());
        if (!machine_->walk_should_wait(tree.size(), opts.walk_window)) break;
        walk_waiting_ = WalkWait{tree.size(), opts.walk_window};
        cv_.wait_for(lock, std::chrono::milliseconds(20));
        walk_waiting_.reset();
        if (!active_ || active_->outcome) return !(stopped = true);
      }
      // The lanes read pieces of the entries walked so far meanwhile (protocol 9).
      active_->files->grow(tree, std::move(batch));
      if (last) {
        log_.write("walked", {{"transfer", active_->id}, {"entries", tree.size()}, {"files", tree.file_count},
                              {"bytes", tree.total_bytes},
                              {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()}});
      }
      machine_->add_entries({}, last, now());
      drain_locked();
      if (active_->outcome) cv_.notify_all();  // the loop need not wake for a part
      return true;
    });
    if (walk.ok() || stopped) return;
    std::lock_guard lock(mu_);
    if (active_ && !active_->outcome) machine_->cancel_transfer(walk.error, now());
    drain_locked();
    cv_.notify_all();
  }, files::walks_in_path_order(scan));
  if (!walk.ok() && !stopped) return {kExitFailure, walk.error, {}};
  return out;
}

std::optional<Rate> SenderSession::known_tcp_rate_locked(const std::string& peer, session::LaneNo id,
                                                         const std::string& local, const std::string& remote_host) {
  const std::string key = PathMemory::tcp_path_key(local, remote_host);
  figure_keys_[id] = key;  // its figures are kept under this key after a verified transfer
  const auto known = path_memory_.hint(peer, key, unix_now());
  return known ? std::optional(known->rate) : std::nullopt;
}

namespace {
/// What compression asks of the receiver: `always` needs protocol 7 (compressed
/// frames); `auto` needs nothing (it sends raw to an older receiver).
wire::ProtocolNeed compress_need(compress::Mode asked) {
  return asked == compress::Mode::always ? wire::ProtocolNeed{7, "--compress always"} : wire::ProtocolNeed{};
}
}  // namespace

compress::Mode SenderSession::compress_for_peer_locked(compress::Mode asked) {
  if (asked == compress::Mode::off || peer_protocol_.version >= 7) return asked;
  log_.write("compress_off", {{"reason", "the receiver speaks braid protocol " + peer_protocol_.text()}});
  return compress::Mode::off;
}

void SenderSession::hear_peer_protocol_locked() {
  // An early transfer that asked for --compress always ends like an offer
  // the receiver cannot read (End::unsupported: one line, kExitRefused).
  machine_->handle_peer_protocol(peer_protocol_, now(), active_ ? compress_need(active_->compress) : wire::ProtocolNeed{});
  // It chose compression on the remembered protocol. No piece has been read
  // yet (its accept comes after these addresses), so its frames can still
  // go raw to a receiver older than compression.
  if (active_ && active_->compress != compress::Mode::off &&
      compress_for_peer_locked(active_->compress) == compress::Mode::off) {
    active_->compress = compress::Mode::off;
    active_->files->stop_compressing();
  }
  drain_locked();
}

std::optional<TransferOutcome> SenderSession::begin_transfer_locked(const files::SourceTree& tree,
                                                                    const TransferOptions& opts, bool streamed,
                                                                    bool ordered) {
  auto policy = core::make_policy(opts.policy);
  if (!policy) return TransferOutcome{kExitUsage, "unknown policy '" + opts.policy + "'", {}};
  session::TransferSpec spec;
  spec.entries_in_place = &tree.entries;  // no second copy of the offer (tree outlives the transfer)
  spec.entries_in_place_first = &tree.first;  // a streamed walk lets go of the entries read no more
  spec.streamed = streamed;
  // The source reads what was walked so far (SourceReader::grow): a receiver
  // of protocol 9 may answer part by part and take pieces before the last
  // part (the machine asks only where it may: no sync, dry run or probe).
  spec.early_pieces = streamed && opts.early_pieces;
  // In path order, a receiver of protocol 10 keeps none of what it wrote.
  spec.ordered = streamed && ordered;
  spec.hash = opts.hash;
  spec.chunk_size = opts.chunk_size;
  spec.policy = std::move(policy);
  spec.sync = opts.sync;
  spec.answer_only = opts.sync.dry_run;  // a dry run ends with the receiver's answer
  spec.last = opts.last;
  // Compressed frames need protocol 7: towards an older receiver --compress
  // auto sends raw, and always is refused in one line.
  if (const std::string why = wire::too_old(compress_need(opts.compress), peer_protocol_); !why.empty())
    return TransferOutcome{kExitRefused, why, {}};
  const compress::Mode compress = compress_for_peer_locked(opts.compress);
  const auto id = machine_->start_transfer(std::move(spec), now());
  if (!id) return TransferOutcome{kExitLanesLost, "every lane closed before the offer could be sent", {}};
  active_ = std::make_unique<Active>();
  Active& t = *active_;
  t.id = *id;
  t.compress = compress;
  // Streamed: it grows with the walk (send_walking), and pieces of what was
  // walked may be read before the walk ends.
  t.files = std::make_shared<SourceReader>(t.id, tree, opts.hash, compress, opts.read_faults);
  t.source = t.files;
  t.start = now();
  // What each lane carried before this transfer (a lane that opens later starts from zero).
  for (const auto& [lid, l] : lanes_) t.at_start[lid] = l->counters();
  log_.write("status", {{"status", "offering"}, {"transfer", t.id}, {"files", tree.file_count},
                        {"bytes", tree.total_bytes}, {"walking", streamed}});
  return std::nullopt;
}

TransferOutcome SenderSession::run_transfer(const files::SourceTree& tree, const TransferOptions& opts,
                                            const std::function<void()>& walk, bool ordered) {
  // The lanes may be inside a read of `tree` when the transfer ends (a
  // refusal, a cancel, a failure, or the end itself): on every way out, the
  // reader is retired (new reads fail, the ones in flight are waited for)
  // before the caller may free the tree. Declared before the lock, it runs
  // once mu_ is let go: a lane finishing its read may want mu_ next.
  std::shared_ptr<SourceReader> reader;
  struct Retire {
    std::shared_ptr<SourceReader>& r;
    ~Retire() {
      if (r) r->retire();
    }
  } retire_reader{reader};
  std::unique_lock lock(mu_);
  // Offered in TLS's last flight already (ConnectOptions::first_tree, a
  // tree walked before connecting): run it.
  const bool early = std::exchange(offered_early_, false) && active_ && !walk && &tree == opts_.first_tree;
  if (!early)
    if (auto failed = begin_transfer_locked(tree, opts, static_cast<bool>(walk), ordered)) return std::move(*failed);
  Active& t = *active_;
  reader = t.files;
  if (opts.display && opts.display->mode() != LiveDisplay::Mode::off) t.display = opts.display;
  drain_locked();
  std::thread walker;
  if (walk) walker = std::thread(walk);
  bool sending_logged = false;
  auto last_draw = std::chrono::steady_clock::now();
  while (!t.outcome) {
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    if (auto to = machine_->poll_timeout()) wake = std::min(wake, epoch_ + std::chrono::nanoseconds(to->ns()));
    plan_wake_locked(wake);
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
    report_transport_progress_locked();
    log_sample_locked();
    if (t.display && machine_->scheduler() && std::chrono::steady_clock::now() - last_draw > std::chrono::milliseconds(200)) {
      draw_progress_locked(false);
      last_draw = std::chrono::steady_clock::now();
    }
  }
  // The last deciles, if no ack was left to log them: a streamed offer
  // answered part by part can have every piece acked before its closing accept.
  log_progress_locked();
  TransferOutcome out = outcome_locked(tree, opts);
  active_.reset();
  if (walker.joinable()) {  // it stops at its next batch (the transfer ended first: refused, lanes lost)
    lock.unlock();
    walker.join();
    lock.lock();
  }
  if (out.report.verified && !opts.sync.dry_run) {
    // What each UDP lane's controller learned, for the next session's start.
    bool learned = false;
    for (const auto& [id, l] : lanes_)
      if (auto f = l->path_figures(); f && figure_keys_.count(id)) {
        path_memory_.remember(peer_.fingerprint.to_string(), figure_keys_[id], *f, unix_now());
        learned = true;
      }
    // A TCP lane's figures: what it delivered first over its active time
    // (the scheduler's hint is a rate; the RTT kept is its pieces' smoothed
    // one). Not under a rate limit, a metered share or --background: those
    // rates are the user's choice for this run, not the path's.
    const bool held = opts_.rate_limit || !opts_.metered.empty() || background_;
    for (const auto& r : out.report.lanes)
      if (!held && r.kind == "tcp" && figure_keys_.count(r.lane_id) && r.bytes > 0 && r.active_seconds > 0 &&
          r.rtt_ms > 0) {
        path_memory_.remember(peer_.fingerprint.to_string(), figure_keys_[r.lane_id],
                              {Rate::bytes_per_sec(static_cast<double>(r.bytes) / r.active_seconds),
                               Duration::seconds_f(r.rtt_ms / 1000)},
                              unix_now());
        learned = true;
      }
    lock.unlock();
    if (learned)
      if (auto e = path_memory_.save(host_->dir); !e.empty()) log_.write("path_figures_unsaved", {{"reason", e}});
  }
  return out;
}

// Each TCP lane's kernel says whether it moves: bytes acked since the last
// look, or nothing in flight waiting for an ack (idle is not silence, and a
// receiver that closed its window — a slow disk — is flow control, not a
// dead path: its data waits unsent, not unacked). The machine decides what
// a silence means (Sender::handle_transport_progress).
void SenderSession::report_transport_progress_locked() {
  const Time n = now();
  if (n < next_progress_look_) return;  // a look per 50 ms is plenty against a 1 s silence
  next_progress_look_ = n + Duration::millis(50);
  for (const auto& [id, lane] : lanes_) {
    lanes::TcpKernelInfo k;
    if (!lane->tcp_info(k)) continue;
    uint64_t& seen = acked_seen_[id];
    if (k.bytes_acked > seen || k.unacked == 0) {
      seen = k.bytes_acked;
      machine_->handle_transport_progress(id, n);
    }
  }
  std::erase_if(acked_seen_, [&](const auto& e) { return !lanes_.count(e.first); });
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
    cap_delay_groups_locked(now());
  }
}

void SenderSession::cap_delay_groups_locked(Time n) {
  // Each group of TCP lanes on one bottleneck gets one coupled cap.
  struct Member {
    DataLane* lane;
    transport::TcpLaneSample sample;
  };
  std::map<std::string, std::vector<Member>> groups;
  for (const auto& v : machine_->lanes()) {
    // A lane under a --rate-limit or --metered share is held by that split,
    // which follows what each lane delivers: a second controller on the
    // same measured rates would talk both down (24-37 of a 60 Mbit/s limit).
    if (!v.open || !v.data) continue;
    DataLane* l = lane_locked(v.id);
    if (l && v.rate_cap) {
      // Uncapped by the group; its state (the split's cap) still goes to the report at every look.
      delay_capped_.erase(v.id);
      l->set_delay_cap(std::nullopt, Duration::zero(), false);
      continue;
    }
    // Loopback lanes form no group (no queue to keep short; a busy host's
    // scheduling would read as one) — but a scavenger's still yield, as one.
    std::string key = l ? l->bottleneck() : std::string();
    if (key.empty() && background_) key = "loopback";
    lanes::TcpKernelInfo k;
    if (!l || key.empty() || !l->tcp_info(k) || k.rtt_us == 0) continue;
    transport::TcpLaneSample s;
    s.lane = v.id;
    s.tcp.now = n;
    s.tcp.srtt = Duration::micros(k.rtt_us);
    s.tcp.bytes_acked = k.bytes_acked;
    s.tcp.retransmits = k.total_retrans;
    s.tcp.segs_in = k.segs_in;
    s.tcp.delivered = k.delivered;
    if (k.snd_mss) s.tcp.mss = Bytes(k.snd_mss);
    s.min_rtt = Duration::micros(k.min_rtt_us);
    s.pacing = Rate::bytes_per_sec(static_cast<double>(k.pacing_rate));
    s.app_limited = k.notsent_bytes == 0;
    groups[key].push_back({l, s});
  }
  for (auto& [key, members] : groups) {
    const transport::TcpGroupCapConfig cfg{background_ ? kBackgroundTarget : opts_.latency_target, background_};
    auto& g = delay_groups_.try_emplace(key, cfg).first->second;
    std::vector<transport::TcpLaneSample> samples;
    for (const auto& m : members) samples.push_back(m.sample);
    const auto caps = g.on_samples(n, samples);
    for (size_t i = 0; i < members.size(); ++i) {
      members[i].lane->set_delay_cap(caps[i].cap, g.queuing_delay(), caps[i].restart);
      delay_capped_.insert(static_cast<session::LaneNo>(members[i].sample.lane));
    }
  }
}

void SenderSession::interrupt(const std::string& reason) {
  std::lock_guard lock(mu_);
  if (!machine_) return;
  machine_->interrupt(reason, now());
  drain_locked();
  if (!active_) {
    // Between transfers: whatever waits on a lane returns.
    for (auto& [id, l] : lanes_) l->close(reason);
  }
}

void SenderSession::close() {
  std::vector<Connector> connectors;
  {
    std::unique_lock lock(mu_);
    if (closing_ || !machine_) return;
    closing_ = true;
    wake_watcher();
    // bye goes on the control lane; the receiver answers it by closing its
    // lanes. Wait a little for that (a dead lane never answers), then close
    // whatever is left: the result never waits on a dead lane. When the
    // goodbye went with done (TransferOptions::last), the receiver closed its
    // lanes right behind its result: nothing is left to wait for (the plain
    // bye still goes, for a receiver of protocol 7 that ignored that one).
    const bool peer_ends = machine_->peer_ends();
    machine_->close(now());
    std::vector<session::CloseLane> closes;
    while (auto a = machine_->poll_action()) {
      if (auto* m = std::get_if<session::SendMessage>(&*a)) act(*m);
      if (auto* c = std::get_if<session::CloseLane>(&*a)) closes.push_back(*c);
    }
    // Only lanes that carry messages hear the bye and close from the far
    // end; a UDP lane has nobody to close it but us: waiting for it would
    // only hold the exit (it was the whole 500 ms with --transport udp).
    cv_.wait_for(lock, std::chrono::milliseconds(peer_ends ? 0 : 500), [&] {
      for (LaneNo id : alive_)
        if (auto it = lanes_.find(id); it != lanes_.end() && it->second->traits().carries_messages) return false;
      return true;
    });
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
  if (watcher_.joinable()) watcher_.join();
  for (auto& c : connectors) c.thread.join();
  bury_closed_lanes();
  log_.write("status", {{"status", "closed"}});
}

}  // namespace braid::transfer
