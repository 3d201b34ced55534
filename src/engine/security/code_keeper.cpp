#include "code_keeper.h"

namespace braid::security {

OneTimeCode::OneTimeCode(PairingCode first, OnChange on_change)
    : code_(std::move(first)), on_change_(std::move(on_change)) {}

std::optional<PairingCode> OneTimeCode::current() const {
  std::lock_guard lock(mu_);
  return code_;
}

unsigned OneTimeCode::failures() const {
  std::lock_guard lock(mu_);
  return ledger_.failures();
}

Result<CodeKeeper::Lease> OneTimeCode::lease() {
  std::lock_guard lock(mu_);
  if (ledger_.closed())
    return make_error(Errc::pairing_failed,
                      "this receiver takes no pairing code any more: " +
                          std::to_string(CodeLedger::kMaxRetiredCodes * CodeLedger::kMaxFailures) +
                          " wrong attempts closed pairing until it restarts (known peers still connect)");
  if (!code_)
    return make_error(Errc::crypto_error, "this receiver has no pairing code: a new one could not be generated");
  return Lease{*code_, ledger_.generation()};
}

CodeLedger::Verdict OneTimeCode::settle(std::uint64_t generation, bool code_right) {
  std::lock_guard lock(mu_);
  const CodeLedger::Settled s = ledger_.settle(generation, code_right);
  if (s.change == CodeLedger::Change::none) return s.verdict;
  code_.reset();
  if (s.change != CodeLedger::Change::closed)
    if (auto next = PairingCode::generate()) code_.emplace(std::move(next.value()));
  if (on_change_) on_change_(Changed{s.change, s.failures, code_ ? &*code_ : nullptr});
  return s.verdict;
}

}  // namespace braid::security
