// netlab's link and event syntax (tools/netlab/model/spec_parser.hpp), read
// from the command line and from lab scripts. The first input byte picks
// the parser (link, event, or one of the single values); the rest is the
// text. Properties: a failure says why; what parses is within the model's
// ranges — times never negative (no signs are accepted, so none may appear
// by overflow), a timed outage ends after it starts, probabilities in
// [0, 1], rates at least 1 bit/s unless unlimited, an MTU within 576..65520.
#include <string_view>

#include "model/spec_parser.hpp"
#include "fuzz_support.hpp"

using namespace netlab;

namespace {

void duration_ok(Duration d) { FUZZ_CHECK(d.count() >= 0); }

void queue_ok(const QueueLimit& q) { duration_ok(q.time); }

void patch_ok(const DirectionPatch& p) {
  if (p.delay) duration_ok(*p.delay);
  if (p.jitter) duration_ok(*p.jitter);
  if (p.codel_target) duration_ok(*p.codel_target);
  if (p.codel_interval) duration_ok(*p.codel_interval);
  if (p.loss) FUZZ_CHECK(*p.loss >= 0 && *p.loss <= 1);
  if (p.rate) FUZZ_CHECK(p.rate->is_unlimited() || p.rate->bps() >= 1);
  if (p.queue) queue_ok(*p.queue);
}

void params_ok(const DirectionParams& d) {
  duration_ok(d.delay);
  duration_ok(d.jitter);
  FUZZ_CHECK(d.loss >= 0 && d.loss <= 1);
  queue_ok(d.queue);
  duration_ok(d.codel.target);
  duration_ok(d.codel.interval);
}

template <class T>
bool failed_with_reason(const Parsed<T>& p) {
  if (p) return false;
  FUZZ_CHECK(!p.error.empty());
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 7) {
    case 0: {
      const auto l = parse_link(text);
      if (failed_with_reason(l)) break;
      FUZZ_CHECK(is_valid_link_name(l.value->name));
      FUZZ_CHECK(l.value->mtu >= 576 && l.value->mtu <= 65520);
      params_ok(l.value->up);
      params_ok(l.value->down);
      break;
    }
    case 1: {
      const auto e = parse_event(text);
      if (failed_with_reason(e)) break;
      const auto& ev = *e.value;
      FUZZ_CHECK(ev.size() == 1 || ev.size() == 2);
      for (const auto& x : ev) {
        FUZZ_CHECK(!x.link.empty() && (x.link == "*" || is_valid_link_name(x.link)));
        duration_ok(x.at);
        patch_ok(x.up);
        patch_ok(x.down);
      }
      if (ev.size() == 2) FUZZ_CHECK(ev[1].at >= ev[0].at);
      break;
    }
    case 2: {
      const auto d = parse_duration(text);
      if (!failed_with_reason(d)) duration_ok(*d.value);
      break;
    }
    case 3: {
      const auto r = parse_rate(text);
      if (!failed_with_reason(r)) FUZZ_CHECK(r.value->is_unlimited() || r.value->bps() >= 1);
      break;
    }
    case 4: {
      const auto p = parse_probability(text);
      if (!failed_with_reason(p)) FUZZ_CHECK(*p.value >= 0 && *p.value <= 1);
      break;
    }
    case 5: {
      const auto q = parse_queue(text);
      if (!failed_with_reason(q)) queue_ok(*q.value);
      break;
    }
    default: {
      (void)failed_with_reason(parse_size(text));
      break;
    }
  }
  return 0;
}
