#include "spec_parser.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace netlab {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// "12.5ms" -> {12.5, "ms"}. No signs, no exponents: nothing here needs them.
struct NumberWithUnit {
  double number = 0;
  std::string unit;  // lower case
};

std::optional<NumberWithUnit> split_number(std::string_view text) {
  std::size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  if (end == 0) return std::nullopt;
  NumberWithUnit out;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, out.number);
  if (ec != std::errc{} || ptr != text.data() + end || !std::isfinite(out.number)) return std::nullopt;
  out.unit = lower(text.substr(end));
  return out;
}

/// A scaled number as a whole count, or nothing if it does not fit in 63
/// bits: std::llround's result is unspecified there (glibc gives a negative
/// number), and no time, rate or size of a link needs that much.
std::optional<std::int64_t> whole(double v) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!(v < kTwoTo63)) return std::nullopt;
  return std::llround(v);
}

struct UnitScale {
  std::string_view name;
  double scale;
};

template <std::size_t N>
std::optional<double> scale_of(const std::string& unit, const UnitScale (&table)[N]) {
  for (const auto& u : table)
    if (unit == u.name) return u.scale;
  return std::nullopt;
}

constexpr UnitScale kTimeUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
constexpr UnitScale kRateUnits[] = {{"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}};
constexpr UnitScale kSizeUnits[] = {{"", 1},          {"b", 1},           {"kb", 1e3},
                                    {"kib", 1024},    {"mb", 1e6},        {"mib", 1048576},
                                    {"gb", 1e9},      {"gib", 1073741824}};
constexpr UnitScale kPacketUnits[] = {{"p", 1}, {"pkt", 1}, {"pkts", 1}, {"packets", 1}};

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(sep, start), text.size());
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string quoted(std::string_view s) {
  // Built piecewise: GCC 12 warns falsely (-Wrestrict) on "'" + std::string(s) + "'".
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

Parsed<bool> parse_switch(std::string_view text) {
  const std::string v = lower(text);
  if (v == "on" || v == "1" || v == "yes" || v == "true") return Parsed<bool>::ok(true);
  if (v == "off" || v == "0" || v == "no" || v == "false") return Parsed<bool>::ok(false);
  return Parsed<bool>::fail("expected on or off, got " + quoted(text));
}

/// Which directions a key applies to, after stripping "up." / "down.".
struct DirectedKey {
  bool up = true;
  bool down = true;
  std::string_view key;
};

DirectedKey direct(std::string_view key) {
  if (key.starts_with("up.")) return {true, false, key.substr(3)};
  if (key.starts_with("down.")) return {false, true, key.substr(5)};
  return {true, true, key};
}

/// Sets one model key on a patch. Returns an error text, empty on success.
std::string set_patch_key(DirectionPatch& patch, std::string_view key, std::optional<std::string_view> value) {
  auto need = [&]() -> std::string {
    return value ? std::string{} : "key " + quoted(key) + " needs a value";
  };
  auto take = [&](auto parsed, auto& slot) -> std::string {
    if (!parsed) return "bad " + std::string(key) + ": " + parsed.error;
    slot = *parsed.value;
    return {};
  };
  if (key == "codel") {
    if (!value) {
      patch.codel = true;
      return {};
    }
    return take(parse_switch(*value), patch.codel);
  }
  if (auto e = need(); !e.empty()) return e;
  if (key == "rate") return take(parse_rate(*value), patch.rate);
  if (key == "delay") return take(parse_duration(*value), patch.delay);
  if (key == "jitter") return take(parse_duration(*value), patch.jitter);
  if (key == "loss") return take(parse_probability(*value), patch.loss);
  if (key == "queue") return take(parse_queue(*value), patch.queue);
  if (key == "codel.target") return take(parse_duration(*value), patch.codel_target);
  if (key == "codel.interval") return take(parse_duration(*value), patch.codel_interval);
  return "unknown key " + quoted(key) +
         " (expected rate, delay, jitter, loss, queue, codel, codel.target, codel.interval)";
}

struct KeyValue {
  std::string_view key;
  std::optional<std::string_view> value;
};

KeyValue split_key_value(std::string_view item) {
  const auto eq = item.find('=');
  if (eq == std::string_view::npos) return {item, std::nullopt};
  return {item.substr(0, eq), item.substr(eq + 1)};
}

}  // namespace

Parsed<Duration> parse_duration(std::string_view text) {
  const auto n = split_number(text);
  if (!n) return Parsed<Duration>::fail("not a duration: " + quoted(text));
  if (n->unit.empty() && n->number != 0)
    return Parsed<Duration>::fail("duration " + quoted(text) + " needs a unit (us, ms, s)");
  const auto scale = n->unit.empty() ? std::optional<double>{1} : scale_of(n->unit, kTimeUnits);
  if (!scale) return Parsed<Duration>::fail("unknown time unit in " + quoted(text) + " (use ns, us, ms, s)");
  const auto ns = whole(n->number * *scale);
  if (!ns) return Parsed<Duration>::fail("duration " + quoted(text) + " is too long");
  return Parsed<Duration>::ok(Duration{*ns});
}

Parsed<BitRate> parse_rate(std::string_view text) {
  const std::string v = lower(text);
  if (v == "unlimited" || v == "inf" || v == "0") return Parsed<BitRate>::ok(BitRate::unlimited());
  const auto n = split_number(text);
  if (!n) return Parsed<BitRate>::fail("not a rate: " + quoted(text));
  const auto scale = scale_of(n->unit, kRateUnits);
  if (!scale)
    return Parsed<BitRate>::fail("unknown rate unit in " + quoted(text) + " (use bit, kbit, Mbit, Gbit)");
  const double bps = n->number * *scale;
  if (bps < 1) return Parsed<BitRate>::fail("rate " + quoted(text) + " is below 1 bit/s");
  const auto whole_bps = whole(bps);
  if (!whole_bps) return Parsed<BitRate>::fail("rate " + quoted(text) + " is too high");
  return Parsed<BitRate>::ok(BitRate::bits_per_second(static_cast<std::uint64_t>(*whole_bps)));
}

Parsed<double> parse_probability(std::string_view text) {
  const auto n = split_number(text);
  if (!n || (n->unit != "" && n->unit != "%")) return Parsed<double>::fail("not a probability: " + quoted(text));
  const double p = n->unit == "%" ? n->number / 100.0 : n->number;
  if (p < 0 || p > 1) return Parsed<double>::fail("probability " + quoted(text) + " is outside 0..1 (0..100%)");
  return Parsed<double>::ok(p);
}

Parsed<std::uint64_t> parse_size(std::string_view text) {
  const auto n = split_number(text);
  if (!n) return Parsed<std::uint64_t>::fail("not a size: " + quoted(text));
  const auto scale = scale_of(n->unit, kSizeUnits);
  if (!scale)
    return Parsed<std::uint64_t>::fail("unknown size unit in " + quoted(text) + " (use B, KB, KiB, MB, MiB)");
  const auto bytes = whole(n->number * *scale);
  if (!bytes) return Parsed<std::uint64_t>::fail("size " + quoted(text) + " is too large");
  return Parsed<std::uint64_t>::ok(static_cast<std::uint64_t>(*bytes));
}

Parsed<QueueLimit> parse_queue(std::string_view text) {
  const auto n = split_number(text);
  if (!n) return Parsed<QueueLimit>::fail("not a queue limit: " + quoted(text));
  if (scale_of(n->unit, kPacketUnits)) {
    const auto packets = whole(n->number);
    if (!packets) return Parsed<QueueLimit>::fail("queue " + quoted(text) + " is too long");
    return Parsed<QueueLimit>::ok(QueueLimit::packets(static_cast<std::uint64_t>(*packets)));
  }
  if (scale_of(n->unit, kTimeUnits)) {
    const auto d = parse_duration(text);
    if (!d) return Parsed<QueueLimit>::fail(d.error);
    return Parsed<QueueLimit>::ok(QueueLimit::duration(*d.value));
  }
  if (n->unit.empty())
    return Parsed<QueueLimit>::fail("queue " + quoted(text) + " needs a unit: packets (1000p), bytes (2MB) or time (50ms)");
  const auto bytes = parse_size(text);
  if (!bytes)
    return Parsed<QueueLimit>::fail("queue " + quoted(text) + " needs a unit: packets (1000p), bytes (2MB) or time (50ms)");
  return Parsed<QueueLimit>::ok(QueueLimit::bytes(*bytes.value));
}

bool is_valid_link_name(std::string_view name) {
  if (name.empty() || name.size() > 12) return false;  // "nl-" + name fits IFNAMSIZ-1
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
}

Parsed<LinkSpec> parse_link(std::string_view text) {
  using R = Parsed<LinkSpec>;
  const auto colon = text.find(':');
  LinkSpec spec;
  spec.name = std::string(text.substr(0, colon));
  if (!is_valid_link_name(spec.name))
    return R::fail("link name " + quoted(spec.name) + " must be 1-12 letters, digits, '_' or '-'");
  if (colon == std::string_view::npos) return R::ok(std::move(spec));

  DirectionPatch up, down;
  for (std::string_view item : split(text.substr(colon + 1), ',')) {
    if (item.empty()) continue;
    const auto [raw_key, value] = split_key_value(item);
    if (raw_key == "mtu" || raw_key == "gso" || raw_key == "seed") {
      if (!value) return R::fail("link " + spec.name + ": key " + quoted(raw_key) + " needs a value");
      if (raw_key == "gso") {
        const auto on = parse_switch(*value);
        if (!on) return R::fail("link " + spec.name + ": gso: " + on.error);
        spec.gso = *on.value;
        continue;
      }
      const auto n = parse_size(*value);
      if (!n) return R::fail("link " + spec.name + ": " + std::string(raw_key) + ": " + n.error);
      if (raw_key == "seed") {
        spec.seed = *n.value;
      } else {
        if (*n.value < 576 || *n.value > 65520)
          return R::fail("link " + spec.name + ": mtu must be within 576..65520");
        spec.mtu = static_cast<unsigned>(*n.value);
      }
      continue;
    }
    const DirectedKey dk = direct(raw_key);
    for (auto [wanted, patch] : {std::pair{dk.up, &up}, std::pair{dk.down, &down}}) {
      if (!wanted) continue;
      if (auto e = set_patch_key(*patch, dk.key, value); !e.empty()) return R::fail("link " + spec.name + ": " + e);
    }
  }
  up.apply_to(spec.up);
  down.apply_to(spec.down);
  return R::ok(std::move(spec));
}

Parsed<std::vector<LinkEvent>> parse_event(std::string_view text) {
  using R = Parsed<std::vector<LinkEvent>>;
  LinkEvent ev;
  std::optional<Duration> outage_length;
  bool outage_up = false, outage_down = false;
  for (std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    const auto [raw_key, value] = split_key_value(item);
    if (raw_key == "at") {
      const auto d = value ? parse_duration(*value) : Parsed<Duration>::fail("at needs a time");
      if (!d) return R::fail("event: at: " + d.error);
      ev.at = *d.value;
      continue;
    }
    if (raw_key == "link") {
      if (!value || (*value != "*" && !is_valid_link_name(*value)))
        return R::fail("event: link=NAME (or link=*) expected, got " + quoted(item));
      ev.link = std::string(*value);
      continue;
    }
    if (raw_key == "for") {
      const auto d = value ? parse_duration(*value) : Parsed<Duration>::fail("for needs a duration");
      if (!d) return R::fail("event: for: " + d.error);
      outage_length = *d.value;
      continue;
    }
    // Bare "up"/"down" are the outage words; "up."/"down." prefix a direction.
    const DirectedKey dk = (raw_key == "up" || raw_key == "down") ? DirectedKey{} : direct(raw_key);
    const std::string_view key = (raw_key == "up" || raw_key == "down") ? raw_key : dk.key;
    if (key == "outage" || key == "down" || key == "restore" || key == "up") {
      const bool dark = key == "outage" || key == "down";
      if (value) {
        if (!dark) return R::fail("event: " + std::string(key) + " takes no value");
        const auto d = parse_duration(*value);
        if (!d) return R::fail("event: outage length: " + d.error);
        outage_length = *d.value;
      }
      if (dk.up) {
        ev.up.dark = dark;
        outage_up = dark;
      }
      if (dk.down) {
        ev.down.dark = dark;
        outage_down = dark;
      }
      continue;
    }
    for (auto [wanted, patch] : {std::pair{dk.up, &ev.up}, std::pair{dk.down, &ev.down}}) {
      if (!wanted) continue;
      if (auto e = set_patch_key(*patch, key, value); !e.empty()) return R::fail("event: " + e);
    }
  }
  if (ev.link.empty()) return R::fail("event " + quoted(text) + " names no link (link=NAME or link=*)");
  if (ev.up.empty() && ev.down.empty()) return R::fail("event " + quoted(text) + " changes nothing");
  if (outage_length && !outage_up && !outage_down)
    return R::fail("event " + quoted(text) + ": a length (for=) only goes with an outage");

  // Each time fits alone; their sum may not (a signed overflow).
  if (outage_length && *outage_length > Duration::max() - ev.at)
    return R::fail("event " + quoted(text) + ": the outage would end too late");
  std::vector<LinkEvent> events{ev};
  if (outage_length) {
    LinkEvent back;
    back.at = ev.at + *outage_length;
    back.link = ev.link;
    if (outage_up) back.up.dark = false;
    if (outage_down) back.down.dark = false;
    events.push_back(std::move(back));
  }
  return R::ok(std::move(events));
}

}  // namespace netlab
