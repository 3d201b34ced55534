#include "engine/discovery/discovery.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <random>

#include "engine/lanes/endpoint.hpp"
#include "engine/security/pairing_code.h"

namespace braid::discovery {
namespace {

constexpr Duration kRescanInterval = Duration::seconds(5);

uint64_t seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::optional<IpAddress> parse_ip(const std::string& text) {
  std::array<uint8_t, 16> b{};
  if (::inet_pton(AF_INET, text.c_str(), b.data()) == 1) return IpAddress::v4({b[0], b[1], b[2], b[3]});
  if (::inet_pton(AF_INET6, text.c_str(), b.data()) == 1) return IpAddress::v6_of(b);
  return std::nullopt;
}

// A DNS label from the instance name: at most 63 bytes, cut at a UTF-8 boundary.
std::string instance_label(std::string name) {
  if (name.empty()) name = "braid";
  if (name.size() > kMaxLabel) {
    size_t n = kMaxLabel;
    while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
    name.resize(n);
  }
  return name;
}

// braid-<8 hex>.local from the fingerprint's base64 (stable per identity).
DnsName host_name(const std::string& fingerprint) {
  uint32_t h = 2166136261u;  // FNV-1a: a short stable tag, not a security property
  for (unsigned char c : fingerprint) h = (h ^ c) * 16777619u;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return DnsName::of({std::string("braid-") + buf, "local"});
}

VisiblePeer to_visible(const ServiceInstance& s) {
  VisiblePeer p;
  p.name = s.instance;
  p.host = s.host.str();
  p.port = s.port;
  p.rendezvous = s.txt_value("n");
  p.fingerprint = s.txt_value("fp");
  p.version = s.txt_value("v").value_or("");
  const auto port = std::to_string(s.port);
  for (int pass = 0; pass < 3; ++pass)  // IPv4, global IPv6, link-local IPv6
    for (const auto& a : s.addresses) {
      const int kind = !a.address.v6 ? 0 : a.address.is_link_local() ? 2 : 1;
      if (kind != pass) continue;
      std::string text = a.address.str();
      if (kind == 2) {
        char ifname[IF_NAMESIZE] = {};
        if (!::if_indextoname(a.interface, ifname)) continue;  // the interface went away
        text.append("%").append(ifname);
      }
      if (kind != 0) {
        text.insert(0, 1, '[');
        text.push_back(']');
      }
      p.addresses.push_back(text.append(":").append(port));
    }
  return p;
}

}  // namespace

std::optional<std::string> rendezvous_of(std::string_view code) {
  // A code braid made (or one typed in its forgiving forms) says its number itself.
  if (auto c = security::PairingCode::parse(code)) return c.value().rendezvous();
  // A chosen code of the same shape, "4711-...": its first group.
  if (code.size() < 5) return std::nullopt;
  for (size_t i = 0; i < 4; ++i)
    if (!std::isdigit(static_cast<unsigned char>(code[i]))) return std::nullopt;
  if (code[4] != '-' && code[4] != ' ') return std::nullopt;
  if (code.size() == 5) return std::nullopt;  // the number alone is not a code: the secret is missing
  return std::string(code.substr(0, 4));
}

TargetKind classify_target(std::string_view text, const std::function<bool(std::string_view)>& is_pinned_label) {
  if (text.find(':') != std::string_view::npos) return TargetKind::address;
  if (lanes::parse_numeric_endpoint(std::string(text), 1)) return TargetKind::address;
  if (rendezvous_of(text) || security::PairingCode::parse(text)) return TargetKind::code;
  if (is_pinned_label && is_pinned_label(text)) return TargetKind::label;
  return TargetKind::address;
}

std::vector<std::string> announcement_txt(const std::optional<std::string>& rendezvous, const std::string& fingerprint) {
  std::vector<std::string> txt{"v=" + std::string(kTxtVersion)};
  if (rendezvous) txt.push_back("n=" + *rendezvous);
  if (!fingerprint.empty()) txt.push_back("fp=" + fingerprint);
  return txt;
}

// --- Announcer ----------------------------------------------------------------

namespace {

// The interfaces where the receiver listens, with only those addresses.
std::vector<NetInterface> announced_interfaces(const AnnounceConfig& cfg) {
  std::vector<IpAddress> bound;
  for (const auto& b : cfg.bound)
    if (auto ip = parse_ip(b)) bound.push_back(*ip);
  std::vector<NetInterface> interfaces;
  for (auto n : multicast_interfaces()) {
    std::erase_if(n.addresses, [&](const NetInterface::Address& x) {
      if (x.address.v6 ? cfg.wildcard_v6 : cfg.wildcard_v4) return false;
      return std::find(bound.begin(), bound.end(), x.address) == bound.end();
    });
    if (!n.addresses.empty()) interfaces.push_back(std::move(n));
  }
  return interfaces;
}

// The responder's view: for each link joined, that interface's addresses of that family.
std::vector<ResponderConfig::Interface> responder_interfaces(const MdnsSockets& sockets) {
  std::vector<ResponderConfig::Interface> out;
  for (const auto& link : sockets.links()) {
    const auto& ifs = sockets.interfaces();
    const auto n = std::find_if(ifs.begin(), ifs.end(), [&](const NetInterface& i) { return i.index == link.interface; });
    if (n == ifs.end()) continue;
    auto r = std::find_if(out.begin(), out.end(), [&](const auto& i) { return i.index == link.interface; });
    if (r == out.end()) {
      out.push_back({link.interface, {}});
      r = out.end() - 1;
    }
    for (const auto& x : n->addresses)
      if (x.address.v6 == link.v6) r->addresses.push_back(x.address);
  }
  return out;
}

}  // namespace

std::unique_ptr<Announcer> Announcer::start(const AnnounceConfig& cfg, std::string& error) {
  std::unique_ptr<Announcer> a(new Announcer());
  a->cfg_ = cfg;
  const auto interfaces = announced_interfaces(cfg);
  // No interface yet (a laptop before its Wi-Fi): the sockets open anyway,
  // and the rescan announces once one comes up.
  auto sockets = MdnsSockets::open(interfaces, error, false);
  if (!sockets) return nullptr;
  a->notes_ = sockets->notes();
  if (sockets->links().empty())
    a->notes_.push_back("no multicast-capable interface is up yet; announcing as soon as one is");
  ResponderConfig rc;
  rc.instance = instance_label(cfg.name);
  rc.host = host_name(cfg.fingerprint);
  rc.port = cfg.port;
  rc.txt = announcement_txt(cfg.rendezvous, cfg.fingerprint);
  rc.seed = seed();
  rc.interfaces = responder_interfaces(*sockets);
  a->sockets_ = std::move(sockets);
  a->responder_.emplace(std::move(rc), steady_now());
  a->instance_ = a->responder_->instance();
  a->wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!a->wake_.valid()) {
    error = std::string("eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  a->thread_ = std::thread([p = a.get()] { p->run(); });
  return a;
}

Announcer::~Announcer() {
  stop_ = true;
  const uint64_t one = 1;
  if (wake_.valid()) (void)::write(wake_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

void Announcer::set_rendezvous(std::optional<std::string> rendezvous) {
  {
    std::lock_guard lock(mu_);
    new_rendezvous_ = std::move(rendezvous);
  }
  const uint64_t one = 1;
  (void)::write(wake_.get(), &one, sizeof one);
}

std::string Announcer::instance() const {
  std::lock_guard lock(mu_);
  return instance_;
}

void Announcer::run() {
  Responder& r = *responder_;
  const auto flush = [&] {
    while (auto t = r.poll_transmit()) sockets_->send(*t);
  };
  const auto on_packet = [&](std::span<const uint8_t> b, const PeerAddress& from, const Link& link) {
    r.handle_packet(b, from, link, steady_now());
    flush();
  };
  // Interfaces come and go (Wi-Fi, a cable, a VPN): looked at again every
  // few seconds; a change joins the group there and announces again.
  Time next_scan = steady_now() + kRescanInterval;
  while (!stop_) {
    Time now = steady_now();
    if (now >= next_scan) {
      next_scan = now + kRescanInterval;
      sockets_->refresh(announced_interfaces(cfg_));
      auto ifs = responder_interfaces(*sockets_);
      if (ifs != r.interfaces()) r.set_interfaces(std::move(ifs), now);
    }
    r.handle_timeout(now);
    flush();
    {
      std::lock_guard lock(mu_);
      instance_ = r.instance();
      if (new_rendezvous_) {
        r.set_txt(announcement_txt(*new_rendezvous_, cfg_.fingerprint), now);
        new_rendezvous_.reset();
        r.handle_timeout(now);
      }
    }
    flush();
    const Time next = std::min(r.poll_timeout(), next_scan);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(std::clamp<int64_t>((next - steady_now()).ns(), 0, 1'000'000'000));
    if (!sockets_->wait(deadline, wake_.get(), on_packet)) {
      uint64_t v;
      (void)::read(wake_.get(), &v, sizeof v);
    }
  }
  r.shutdown(steady_now());
  flush();
}

// --- browsing -------------------------------------------------------------------

std::vector<VisiblePeer> browse(Duration wait, const std::function<bool(const VisiblePeer&)>& match, std::string& error) {
  auto sockets = MdnsSockets::open(multicast_interfaces(), error);
  if (!sockets) return {};
  const Time start = steady_now();
  const Time end = start + wait;
  Browser b(BrowserConfig{braid_service_type(), sockets->links(), seed()}, start);
  // Once one peer matches, a little longer for others answering the same
  // query (RFC 6762 6: responders wait 20-120 ms), so that two receivers
  // announcing one number are both seen.
  Time settle = Time::never();
  const auto on_packet = [&](std::span<const uint8_t> bytes, const PeerAddress& from, const Link& link) {
    b.handle_packet(bytes, from, link, steady_now());
  };
  std::vector<VisiblePeer> seen;
  for (;;) {
    const Time now = steady_now();
    b.handle_timeout(now);
    while (auto t = b.poll_transmit()) sockets->send(*t);
    seen.clear();
    for (const auto& s : b.instances(now)) seen.push_back(to_visible(s));
    if (match && settle == Time::never() && std::any_of(seen.begin(), seen.end(), match))
      settle = now + Duration::millis(300);
    if (now >= end || now >= settle) break;
    const Time next = std::min({b.poll_timeout(), end, settle});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(std::max<int64_t>(0, (next - now).ns()));
    sockets->wait(deadline, -1, on_packet);
  }
  return seen;
}

std::vector<VisiblePeer> browse_visible(Duration wait) {
  std::string error;
  return browse(wait, {}, error);
}

}  // namespace braid::discovery
