#include "code_ledger.h"

namespace braid::security {

CodeLedger::Settled CodeLedger::settle(std::uint64_t generation, bool code_right) {
  if (closed_ || generation != live_) return {Verdict::stale, Change::none, 0};
  if (code_right) {
    const unsigned before = failures_;
    ++live_;
    failures_ = 0;
    return {Verdict::accepted, Change::spent, before};
  }
  const unsigned now = ++failures_;
  if (now < kMaxFailures) return {Verdict::wrong_code, Change::none, now};
  ++live_;
  failures_ = 0;
  closed_ = ++retired_ >= kMaxRetiredCodes;
  return {Verdict::wrong_code, closed_ ? Change::closed : Change::retired, now};
}

}  // namespace braid::security
