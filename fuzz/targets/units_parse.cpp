// braid's unit parser (core/units_parse.hpp): sizes, rates and durations on
// the command line and in scenario files. The first input byte picks the
// parser; the rest is the text. Properties: no value is negative or
// non-finite (the parser takes no signs, so none may appear by overflow);
// a whole number of bytes or nanoseconds prints and parses back to itself;
// the report formatters take whatever the parsers give.
#include <cmath>
#include <string>
#include <string_view>

#include "core/units_parse.hpp"
#include "fuzz_support.hpp"

using namespace braid;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0: {
      const auto b = parse_size(text);
      if (!b) break;
      (void)format_size(*b);
      // Doubles hold integers exactly below 2^53.
      if (b->count() < (uint64_t{1} << 53)) {
        const auto again = parse_size(std::to_string(b->count()) + "B");
        FUZZ_CHECK(again && *again == *b);
      }
      break;
    }
    case 1: {
      const auto r = parse_rate(text);
      if (!r) break;
      FUZZ_CHECK(r->bytes_per_second() >= 0 && std::isfinite(r->bytes_per_second()));
      (void)format_rate(*r);
      break;
    }
    default: {
      const auto d = parse_duration(text);
      if (!d) break;
      FUZZ_CHECK(d->ns() >= 0);
      if (d->ns() < (int64_t{1} << 53)) {
        const auto again = parse_duration(std::to_string(d->ns()) + "ns");
        FUZZ_CHECK(again && *again == *d);
      }
      break;
    }
  }
  return 0;
}
