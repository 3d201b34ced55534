// The receiver's rules for its one-time pairing code, as a pure state
// machine: no clock, threads, randomness or I/O, so every rule is a unit
// test (tests/engine/security/code_ledger_test.cpp). OneTimeCode
// (code_keeper.h) puts it behind a mutex and attaches real codes.
//
// Codes are numbered by generation; one generation is live at a time.
//   - A code pairs once: the first attempt that proves it spends it.
//   - kMaxFailures wrong attempts retire it.
//   - Spent or retired, the next generation becomes live with no failures;
//     the engine attaches a fresh code to it and prints that.
//   - After kMaxRetiredCodes retired codes the ledger closes: no code is
//     live any more and every attempt is refused (stale) — a receiver
//     answers at most kMaxRetiredCodes x kMaxFailures wrong guesses in its
//     life, which bounds an attacker's odds per receiver, not only per code.
//   - An attempt that started with a generation no longer live is refused
//     whatever it proved (stale), and counts against nothing.
// Session settles each pairing attempt exactly once, after checking the
// peer's confirmation and before anything that depends on the check goes
// back to the peer. So however many connections try at once, at most
// kMaxFailures wrong guesses per code are ever answered.
#pragma once

#include <cstdint>

namespace braid::security {

class CodeLedger {
 public:
  // Three lets a person mistype twice and still pair; an attacker's odds
  // per code are 3 / (number of codes). docs/security.md has the numbers.
  static constexpr unsigned kMaxFailures = 3;
  // Ten codes of three: 30 wrong guesses per receiver, P(guessed) <= 30 / 2^44
  // with generated codes, while a person who mistypes has plenty of room.
  static constexpr unsigned kMaxRetiredCodes = 10;

  enum class Verdict : std::uint8_t {
    accepted,    // the live code, proven: the peer may pair; the code is now spent
    wrong_code,  // the live code, not proven: one failure counted
    stale,       // the attempt's code was spent or retired meanwhile: refused either way
  };
  enum class Change : std::uint8_t {
    none,
    spent,    // an accepted attempt used the code up
    retired,  // the kMaxFailures-th wrong attempt
    closed,   // ... of the kMaxRetiredCodes-th code: no new code; pairing is over
  };
  struct Settled {
    Verdict verdict;
    Change change;      // spent/retired: generation() moved on; attach a new code to it (closed: none)
    unsigned failures;  // wrong attempts against the attempt's code, this one included (0 if stale)
  };

  // The live generation: what an attempt starting now pairs against.
  std::uint64_t generation() const { return live_; }
  // Wrong attempts against the live generation so far.
  unsigned failures() const { return failures_; }
  // Closed (kMaxRetiredCodes retired): no attempt is accepted any more.
  bool closed() const { return closed_; }

  // The outcome of one attempt that started with `generation` and whose
  // peer did (`code_right`) or did not prove that code.
  Settled settle(std::uint64_t generation, bool code_right);

 private:
  std::uint64_t live_ = 1;
  unsigned failures_ = 0;
  unsigned retired_ = 0;
  bool closed_ = false;
};

}  // namespace braid::security
