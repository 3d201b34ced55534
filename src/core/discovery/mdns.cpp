#include "core/discovery/mdns.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace braid::discovery {
namespace {

constexpr uint16_t kFlagResponse = 0x8400;  // QR + AA (RFC 6762 18.2, 18.4)

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// RFC 6762 6: a response with shared records waits 20-120 ms, so that
// several responders' answers spread out and can be aggregated.
Duration shared_delay(uint64_t r) { return Duration::millis(20 + static_cast<int64_t>(r % 101)); }

DnsName with_prefix(std::string_view label, const DnsName& rest) {
  DnsName n;
  n.labels.emplace_back(label);
  n.labels.insert(n.labels.end(), rest.labels.begin(), rest.labels.end());
  return n;
}

bool type_matches(uint16_t asked, RrType t) {
  return asked == static_cast<uint16_t>(t) || asked == static_cast<uint16_t>(RrType::any);
}

Record make(const DnsName& name, RrType t, uint32_t ttl, bool flush, decltype(Record::data) data) {
  Record r;
  r.name = name;
  r.type = static_cast<uint16_t>(t);
  r.ttl = ttl;
  r.cache_flush = flush;
  r.data = std::move(data);
  return r;
}

}  // namespace

IpAddress IpAddress::v4(std::array<uint8_t, 4> b) {
  IpAddress a;
  std::copy(b.begin(), b.end(), a.bytes.begin());
  return a;
}

IpAddress IpAddress::v6_of(std::array<uint8_t, 16> b) {
  IpAddress a;
  a.v6 = true;
  a.bytes = b;
  return a;
}

bool IpAddress::is_link_local() const {
  return v6 ? bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80 : bytes[0] == 169 && bytes[1] == 254;
}

std::string IpAddress::str() const {
  char buf[64];
  if (!v6) {
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", bytes[0], bytes[1], bytes[2], bytes[3]);
    return buf;
  }
  // RFC 5952: lower-case hex, the longest run of two or more zero groups as "::".
  uint16_t g[8];
  for (int i = 0; i < 8; ++i) g[i] = static_cast<uint16_t>(bytes[2 * i] << 8 | bytes[2 * i + 1]);
  int best = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    int j = i;
    while (j < 8 && g[j] == 0) ++j;
    if (j - i > best_len && j - i >= 2) best = i, best_len = j - i;
    i = j == i ? i + 1 : j;
  }
  std::string s;
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      s += "::";
      i += best_len - 1;
      continue;
    }
    if (!s.empty() && s.back() != ':') s += ':';
    std::snprintf(buf, sizeof buf, "%x", g[i]);
    s += buf;
  }
  return s;
}

DnsName braid_service_type() { return DnsName::of({"_braid", "_tcp", "local"}); }
DnsName services_meta_query() { return DnsName::of({"_services", "_dns-sd", "_udp", "local"}); }

std::optional<std::string> ServiceInstance::txt_value(std::string_view key) const {
  for (const auto& s : txt) {
    const auto eq = s.find('=');
    const std::string_view k = std::string_view(s).substr(0, eq);
    if (k.size() != key.size()) continue;
    bool same = true;
    for (size_t i = 0; i < k.size(); ++i)
      same = same && std::tolower(static_cast<unsigned char>(k[i])) == std::tolower(static_cast<unsigned char>(key[i]));
    if (!same) continue;
    return eq == std::string::npos ? std::string() : s.substr(eq + 1);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Responder

Responder::Responder(ResponderConfig config, Time now)
    : cfg_(std::move(config)), instance_(cfg_.instance), now_(now), rng_(cfg_.seed) {
  if (instance_.size() > kMaxLabel) instance_.resize(kMaxLabel);
  start_probing(now);
}

uint64_t Responder::random() { return splitmix(rng_); }

DnsName Responder::instance_name() const { return with_prefix(instance_, cfg_.service_type); }

std::vector<Link> Responder::links() const {
  std::vector<Link> out;
  for (const auto& i : cfg_.interfaces) {
    bool v4 = false, v6 = false;
    for (const auto& a : i.addresses) (a.v6 ? v6 : v4) = true;
    if (v4) out.push_back({i.index, false});
    if (v6) out.push_back({i.index, true});
  }
  return out;
}

std::vector<IpAddress> Responder::addresses_on(uint32_t interface) const {
  for (const auto& i : cfg_.interfaces)
    if (i.index == interface) return i.addresses;
  return {};
}

// Every record of the instance, with the addresses of `link`'s interface
// (both families: a host may reach us over either).
std::vector<Record> Responder::records_for(const Link& link, uint32_t ttl, bool use_override) const {
  const auto t = [&](uint32_t normal) { return use_override ? ttl : normal; };
  std::vector<Record> out;
  const DnsName inst = instance_name();
  out.push_back(make(cfg_.service_type, RrType::ptr, t(kOtherRecordTtl), false, inst));
  out.push_back(make(inst, RrType::srv, t(kHostRecordTtl), true, SrvData{0, 0, cfg_.port, cfg_.host}));
  out.push_back(make(inst, RrType::txt, t(kOtherRecordTtl), true, cfg_.txt));
  for (const auto& a : addresses_on(link.interface)) {
    if (a.v6) {
      out.push_back(make(cfg_.host, RrType::aaaa, t(kHostRecordTtl), true, a.bytes));
    } else {
      std::array<uint8_t, 4> v4{a.bytes[0], a.bytes[1], a.bytes[2], a.bytes[3]};
      out.push_back(make(cfg_.host, RrType::a, t(kHostRecordTtl), true, v4));
    }
  }
  return out;
}

void Responder::queue(Time at, Transmit tx) {
  if (pending_.size() >= kMaxPendingTransmits) return;  // a flood of queries: the rest go unanswered
  pending_.push_back({at, std::move(tx)});
}

void Responder::start_probing(Time now) {
  state_ = State::probing;
  probes_sent_ = 0;
  announcements_left_ = 0;
  next_announce_ = Time::never();
  // RFC 6762 8.1: the first probe after a random 0-250 ms.
  next_probe_ = now + Duration::millis(static_cast<int64_t>(random() % 251));
}

void Responder::send_probe(Time now) {
  // A query for the instance name, type ANY, QU, with what we would claim in
  // the authority section (RFC 6762 8.1, 8.2).
  for (const auto& link : links()) {
    Message m;
    m.questions.push_back({instance_name(), static_cast<uint16_t>(RrType::any), true, kClassIn});
    auto recs = records_for(link, 0, false);
    for (auto& r : recs)
      if (r.name == instance_name()) {
        r.cache_flush = false;
        m.authorities.push_back(r);
      }
    queue(now, Transmit{link, std::nullopt, encode(m)});
  }
  ++probes_sent_;
  next_probe_ = now + Duration::millis(250);
}

void Responder::announce(Time now) {
  for (const auto& link : links()) {
    Message m;
    m.flags = kFlagResponse;
    m.answers = records_for(link, 0, false);
    queue(now, Transmit{link, std::nullopt, encode(m)});
    last_multicast_[{link.interface, link.v6}] = now;
  }
  --announcements_left_;
  // RFC 6762 8.3: at least two announcements, one second apart.
  next_announce_ = announcements_left_ > 0 ? now + Duration::seconds(1) : Time::never();
}

void Responder::handle_timeout(Time now) {
  now_ = std::max(now_, now);
  if (state_ == State::stopped) return;
  if (state_ == State::probing && now >= next_probe_) {
    if (probes_sent_ < 3) {
      send_probe(now);
    } else {  // three probes, 250 ms apart, and nobody claimed the name
      state_ = State::announced;
      next_probe_ = Time::never();
      announcements_left_ = 2;
      next_announce_ = now;
    }
  }
  if (state_ == State::announced && now >= next_announce_) announce(now);
}

void Responder::set_txt(std::vector<std::string> txt, Time now) {
  now_ = std::max(now_, now);
  cfg_.txt = std::move(txt);
  if (state_ != State::announced) return;  // probing: announced with the new TXT when it ends
  announcements_left_ = 2;
  next_announce_ = now;
  last_multicast_.clear();
}

void Responder::set_interfaces(std::vector<ResponderConfig::Interface> interfaces, Time now) {
  now_ = std::max(now_, now);
  cfg_.interfaces = std::move(interfaces);
  if (state_ != State::announced) return;
  announcements_left_ = 2;
  next_announce_ = now;
  last_multicast_.clear();
}

void Responder::shutdown(Time now) {
  now_ = std::max(now_, now);
  if (state_ == State::stopped) return;
  pending_.clear();
  if (state_ == State::announced) {
    for (const auto& link : links()) {
      Message m;
      m.flags = kFlagResponse;
      m.answers = records_for(link, 0, true);  // TTL 0: goodbye (RFC 6762 10.1)
      queue(now, Transmit{link, std::nullopt, encode(m)});
    }
  }
  state_ = State::stopped;
}

void Responder::handle_packet(std::span<const uint8_t> bytes, const PeerAddress& from, const Link& link, Time now) {
  now_ = std::max(now_, now);
  if (state_ == State::stopped) return;
  auto d = decode(bytes);
  if (!d.message) {
    ++malformed_;
    return;
  }
  const Message& m = *d.message;
  const DnsName inst = instance_name();
  if (m.is_response()) {
    // Someone else answers for our instance name while we probe: the name
    // is taken (RFC 6762 8.1, 9). Our own announcements cannot be it: we
    // send none while probing. After probing, a conflicting announcement is
    // left to the peer's own probing (ours answered it).
    if (state_ != State::probing) return;
    for (const auto* section : {&m.answers, &m.additionals})
      for (const auto& r : *section)
        if (r.name == inst && r.ttl > 0) {
          ++renames_;
          instance_ = cfg_.instance.substr(0, kMaxLabel - 6) + " (" + std::to_string(renames_ + 1) + ")";
          start_probing(now);
          return;
        }
    return;
  }
  if (state_ != State::announced) return;
  answer(m, from, link, now);
}

void Responder::answer(const Message& q, const PeerAddress& from, const Link& link, Time now) {
  const bool legacy = from.port != kMdnsPort;  // RFC 6762 6.7: a one-shot resolver's query
  const DnsName inst = instance_name();
  const auto all = records_for(link, 0, false);
  std::vector<Record> answers, additionals;
  const bool unicast = legacy;
  bool shared = false;
  const auto add = [&](std::vector<Record>& to, const Record& r) {
    for (const auto& have : answers)
      if (have.same_rr(r)) return;
    for (const auto& have : to)
      if (have.same_rr(r)) return;
    to.push_back(r);
  };
  for (const auto& question : q.questions) {
    if (question.rclass != kClassIn && question.rclass != 255) continue;
    if (question.name == services_meta_query() && type_matches(question.type, RrType::ptr)) {
      add(answers, make(services_meta_query(), RrType::ptr, kOtherRecordTtl, false, cfg_.service_type));
      shared = true;
    }
    for (const auto& r : all) {
      if (!(r.name == question.name) || !type_matches(question.type, static_cast<RrType>(r.type))) continue;
      add(answers, r);
      shared = shared || r.type == static_cast<uint16_t>(RrType::ptr);
    }
  }
  // A QU question (RFC 6762 5.4) is still answered by multicast: on a host
  // where several processes share port 5353 (SO_REUSEPORT), a unicast reply
  // reaches only one of them, maybe not the asker. Multicast is always a
  // valid answer, and every querier on the link learns from it.
  // A probe (a query with records in its authority section, RFC 6762 8.1)
  // is answered at once and may be answered again after 250 ms, not 1 s
  // (section 6's one exception): the prober decides within 750 ms.
  const bool probe = !q.authorities.empty();
  // Known-answer suppression (RFC 6762 7.1): the querier already holds it
  // with at least half its TTL left.
  std::erase_if(answers, [&](const Record& r) {
    for (const auto& k : q.answers)
      if (k.same_rr(r) && k.ttl >= r.ttl / 2) return true;
    return false;
  });
  if (answers.empty()) return;
  // What the querier will want next (RFC 6763 12): SRV and TXT with a PTR, addresses with an SRV.
  for (const auto& r : all) {
    const bool has_ptr = std::any_of(answers.begin(), answers.end(), [](const Record& a) { return a.type == 12; });
    const bool has_srv = std::any_of(answers.begin(), answers.end(), [](const Record& a) { return a.type == 33; });
    if ((has_ptr && r.name == inst) || ((has_ptr || has_srv) && r.name == cfg_.host)) add(additionals, r);
  }
  Message m;
  m.flags = kFlagResponse;
  m.answers = std::move(answers);
  m.additionals = std::move(additionals);
  Time at = shared ? now + shared_delay(random()) : now;
  if (legacy) {  // echo the id and the questions, short TTLs, no cache-flush bits (RFC 6762 6.7)
    m.id = q.id;
    m.questions = q.questions;
    for (auto* section : {&m.answers, &m.additionals})
      for (auto& r : *section) {
        r.ttl = std::min(r.ttl, kLegacyUnicastTtl);
        r.cache_flush = false;
      }
    at = now;
  }
  if (!unicast) {
    // At most one multicast of the answer set per second per link (RFC 6762 6).
    auto& last = (probe ? last_probe_answer_ : last_multicast_)[{link.interface, link.v6}];
    const Duration gap = probe ? Duration::millis(250) : Duration::seconds(1);
    if (last != Time() && now - last < gap) return;
    last = now;
    if (probe) at = now;
  }
  ++answered_;
  queue(at, Transmit{link, unicast ? std::optional<PeerAddress>(from) : std::nullopt, encode(m)});
}

std::optional<Transmit> Responder::poll_transmit() {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    // The caller drains after each handle_*: everything due by the latest
    // event's time goes; later ones wait for their handle_timeout.
    if (it->at <= now_) {
      Transmit tx = std::move(it->tx);
      pending_.erase(it);
      return tx;
    }
  }
  return std::nullopt;
}

Time Responder::poll_timeout() const {
  Time t = Time::never();
  if (state_ == State::stopped) return t;
  if (state_ == State::probing) t = std::min(t, next_probe_);
  t = std::min(t, next_announce_);
  for (const auto& p : pending_) t = std::min(t, p.at);
  return t;
}

// ---------------------------------------------------------------------------
// Browser

Browser::Browser(BrowserConfig config, Time now) : cfg_(std::move(config)), rng_(cfg_.seed) {
  // RFC 6762 5.2: the first query after a random 20-120 ms.
  next_query_ = now + shared_delay(random());
  interval_ = Duration::seconds(1);
}

uint64_t Browser::random() { return splitmix(rng_); }

void Browser::expire(Time now) {
  std::erase_if(cache_, [&](const Cached& c) { return c.expires <= now; });
}

void Browser::send_queries(Time now) {
  Message m;
  m.questions.push_back({cfg_.service_type, static_cast<uint16_t>(RrType::ptr), false, kClassIn});
  for (const auto& c : cache_) {
    if (c.rec.type != static_cast<uint16_t>(RrType::ptr) || !(c.rec.name == cfg_.service_type)) continue;
    // Known answers with more than half their TTL left (RFC 6762 7.1).
    const Duration left = c.expires - now;
    if (left > Duration::seconds(c.rec.ttl) / 2) {
      Record k = c.rec;
      k.ttl = static_cast<uint32_t>(left.ns() / 1'000'000'000);
      m.answers.push_back(k);
    }
    // An instance whose SRV or TXT we lack: ask for it by name.
    const auto& inst = std::get<DnsName>(c.rec.data);
    bool srv = false, txt = false;
    for (const auto& o : cache_) {
      if (!(o.rec.name == inst)) continue;
      srv = srv || o.rec.type == static_cast<uint16_t>(RrType::srv);
      txt = txt || o.rec.type == static_cast<uint16_t>(RrType::txt);
      if (o.rec.type == static_cast<uint16_t>(RrType::srv)) {
        const auto& host = std::get<SrvData>(o.rec.data).target;
        const bool addr = std::any_of(cache_.begin(), cache_.end(), [&](const Cached& a) {
          return a.rec.name == host && (a.rec.type == 1 || a.rec.type == 28);
        });
        if (!addr) {
          m.questions.push_back({host, static_cast<uint16_t>(RrType::a), false, kClassIn});
          m.questions.push_back({host, static_cast<uint16_t>(RrType::aaaa), false, kClassIn});
        }
      }
    }
    if (!srv) m.questions.push_back({inst, static_cast<uint16_t>(RrType::srv), false, kClassIn});
    if (!txt) m.questions.push_back({inst, static_cast<uint16_t>(RrType::txt), false, kClassIn});
    if (m.questions.size() > 32) break;  // plenty for one packet
  }
  const auto bytes = encode(m);
  for (const auto& link : cfg_.links)
    if (out_.size() < kMaxPendingTransmits) out_.push_back(Transmit{link, std::nullopt, bytes});
}

void Browser::handle_timeout(Time now) {
  expire(now);
  if (now < next_query_) return;
  send_queries(now);
  next_query_ = now + interval_;
  // RFC 6762 5.2: the interval at least doubles each time, up to an hour.
  interval_ = std::min(interval_ * 2.0, Duration::seconds(3600));
}

void Browser::store(const Record& rec, uint32_t interface, Time now) {
  // Same record (from the same interface for an address): refresh or, TTL 0, forget.
  const bool is_addr = rec.type == 1 || rec.type == 28;
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (!it->rec.same_rr(rec) || (is_addr && it->interface != interface)) continue;
    if (rec.ttl == 0) {
      cache_.erase(it);
      return;
    }
    it->rec.ttl = rec.ttl;
    it->received = now;
    it->expires = now + Duration::seconds(rec.ttl);
    return;
  }
  if (rec.ttl == 0) return;
  if (rec.cache_flush) {
    // RFC 6762 10.2: other records of this name and type received more than a second ago are stale.
    std::erase_if(cache_, [&](const Cached& c) {
      return c.rec.type == rec.type && c.rec.name == rec.name && now - c.received > Duration::seconds(1) &&
             (!is_addr || c.interface == interface);
    });
  }
  if (cache_.size() >= kMaxCachedRecords) {
    ++dropped_;
    return;
  }
  cache_.push_back({rec, interface, now, now + Duration::seconds(rec.ttl)});
}

void Browser::handle_packet(std::span<const uint8_t> bytes, const PeerAddress& from, const Link& link, Time now) {
  // RFC 6762 6: responses not from port 5353 are ignored.
  if (from.port != kMdnsPort) return;
  auto d = decode(bytes);
  if (!d.message) {
    ++malformed_;
    return;
  }
  const Message& m = *d.message;
  if (!m.is_response()) return;
  expire(now);
  std::vector<const Record*> recs;
  for (const auto* section : {&m.answers, &m.additionals})
    for (const auto& r : *section) recs.push_back(&r);
  // First what names instances of our type, then the hosts those name:
  // nothing else is kept, so other services' traffic cannot fill the cache.
  const auto known_instance = [&](const DnsName& n) {
    if (n.labels.size() != cfg_.service_type.labels.size() + 1 || !n.ends_with(cfg_.service_type)) return false;
    for (const auto* r : recs)
      if (r->type == 12 && r->name == cfg_.service_type && std::get<DnsName>(r->data) == n) return true;
    return std::any_of(cache_.begin(), cache_.end(), [&](const Cached& c) {
      return c.rec.type == 12 && c.rec.name == cfg_.service_type && std::get<DnsName>(c.rec.data) == n;
    });
  };
  for (const auto* r : recs) {
    if (r->rclass != kClassIn) continue;
    if (r->type == 12 && r->name == cfg_.service_type) {
      const auto& target = std::get<DnsName>(r->data);
      if (target.labels.size() == cfg_.service_type.labels.size() + 1 && target.ends_with(cfg_.service_type))
        store(*r, link.interface, now);
    }
  }
  for (const auto* r : recs)
    if (r->rclass == kClassIn && (r->type == 33 || r->type == 16) && known_instance(r->name))
      store(*r, link.interface, now);
  for (const auto* r : recs) {
    if (r->rclass != kClassIn || (r->type != 1 && r->type != 28)) continue;
    const bool named = std::any_of(cache_.begin(), cache_.end(), [&](const Cached& c) {
      return c.rec.type == 33 && std::get<SrvData>(c.rec.data).target == r->name;
    });
    if (named) store(*r, link.interface, now);
  }
}

std::optional<Transmit> Browser::poll_transmit() {
  if (out_.empty()) return std::nullopt;
  Transmit t = std::move(out_.front());
  out_.pop_front();
  return t;
}

Time Browser::poll_timeout() const {
  Time t = next_query_;
  for (const auto& c : cache_) t = std::min(t, c.expires);
  return t;
}

std::vector<ServiceInstance> Browser::instances(Time now) const {
  std::vector<ServiceInstance> out;
  for (const auto& p : cache_) {
    if (p.expires <= now || p.rec.type != 12 || !(p.rec.name == cfg_.service_type)) continue;
    const auto& inst = std::get<DnsName>(p.rec.data);
    ServiceInstance s;
    s.instance = inst.labels.front();
    bool srv = false, txt = false;
    for (const auto& c : cache_) {
      if (c.expires <= now || !(c.rec.name == inst)) continue;
      if (c.rec.type == 33 && !srv) {
        const auto& d = std::get<SrvData>(c.rec.data);
        s.host = d.target;
        s.port = d.port;
        srv = true;
      } else if (c.rec.type == 16 && !txt) {
        s.txt = std::get<std::vector<std::string>>(c.rec.data);
        txt = true;
      }
    }
    if (!srv || !txt) continue;
    for (const auto& c : cache_) {
      if (c.expires <= now || !(c.rec.name == s.host)) continue;
      IpAddress a;
      if (c.rec.type == 1) {
        const auto& b = std::get<std::array<uint8_t, 4>>(c.rec.data);
        a = IpAddress::v4(b);
      } else if (c.rec.type == 28) {
        a = IpAddress::v6_of(std::get<std::array<uint8_t, 16>>(c.rec.data));
      } else {
        continue;
      }
      // One entry per address; a link-local one per interface it was heard on (its scope).
      const bool dup = std::any_of(s.addresses.begin(), s.addresses.end(), [&](const ServiceInstance::Address& x) {
        return x.address == a && (!a.is_link_local() || x.interface == c.interface);
      });
      if (!dup) s.addresses.push_back({a, c.interface});
    }
    if (s.addresses.empty()) continue;
    const bool dup = std::any_of(out.begin(), out.end(), [&](const ServiceInstance& o) {
      return DnsName::of({o.instance}) == DnsName::of({s.instance});
    });
    if (!dup) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace braid::discovery
