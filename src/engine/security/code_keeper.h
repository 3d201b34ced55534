// A receiver's pairing code as Session sees it (server role): lease the live
// code when a pairing attempt starts, settle the attempt once the peer's
// confirmation has been checked. Session asks; the keeper decides.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "code_ledger.h"
#include "pairing_code.h"
#include "result.h"

namespace braid::security {

class CodeKeeper {
 public:
  struct Lease {
    PairingCode code;
    std::uint64_t generation;
  };
  virtual ~CodeKeeper() = default;
  // The code to pair with now. An error ends the attempt before any PAKE message.
  virtual Result<Lease> lease() = 0;
  // Called exactly once per attempt that got the peer's share and
  // confirmation, before anything depending on `code_right` is sent back.
  // Only `accepted` lets the pairing go on.
  virtual CodeLedger::Verdict settle(std::uint64_t generation, bool code_right) = 0;
};

// The receiver's keeper: a CodeLedger behind a mutex, holding the live code.
// Thread-safe: handshake workers lease and settle concurrently. When the
// ledger spends or retires a code, a fresh one is generated and `on_change`
// is called with it, under the keeper's lock, so changes are reported in
// order and the last code reported is the live one. on_change must not call
// back into the keeper.
class OneTimeCode final : public CodeKeeper {
 public:
  struct Changed {
    CodeLedger::Change why;    // spent, retired or closed
    unsigned failures;         // wrong attempts the old code had
    const PairingCode* next;   // the new live code; null if closed or none could be generated
  };
  using OnChange = std::function<void(const Changed&)>;

  explicit OneTimeCode(PairingCode first, OnChange on_change = {});

  // The live code; nullopt if generating a replacement failed (then every
  // pairing attempt fails with Errc::crypto_error).
  std::optional<PairingCode> current() const;
  // Wrong attempts against the live code so far.
  unsigned failures() const;

  Result<Lease> lease() override;
  CodeLedger::Verdict settle(std::uint64_t generation, bool code_right) override;

 private:
  mutable std::mutex mu_;
  CodeLedger ledger_;
  std::optional<PairingCode> code_;
  OnChange on_change_;
};

}  // namespace braid::security
