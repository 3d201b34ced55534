// `braid send`'s last operand: HOST[:PORT] as before, or a pairing code or
// a pinned peer's label, found on the local network (engine/discovery).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/transfer/sender_session.hpp"

namespace braid::cli {

/// One receiver to try: the addresses to connect to, in order.
struct Candidate {
  std::string name;                  // for messages: the instance name, or the operand
  std::vector<std::string> remotes;  // HOST[:PORT] each
};

struct SendTarget {
  std::vector<Candidate> candidates;     // tried in order
  std::optional<std::string> code;       // the code to pair with (--code, or the operand)
};

/// Turns the operand (and --code) into receivers to try. Browses the local
/// network for up to `wait` for a code or a label; fails with a sentence
/// and an exit code (2: two different codes; 3: nobody seen).
std::variant<SendTarget, transfer::Failure> find_receiver(const std::string& operand,
                                                          const std::optional<std::string>& code_flag,
                                                          double wait_seconds);

/// How long `send`/`probe` look for a code's or a label's receiver on the
/// local network: the browser's first query goes out within 120 ms and the
/// second at ~1.1 s (RFC 6762 5.2), and a receiver answers in 20-120 ms; 3 s
/// covers a lost first exchange. Browsing returns as soon as it is seen.
constexpr double kBrowseSeconds = 3.0;

/// Connects to the first candidate that answers: each address of a candidate
/// in turn while they are unreachable; a candidate that answers but fails
/// (a wrong code, a refusal) is reported (as `command`) and the next one tried.
std::variant<std::unique_ptr<transfer::SenderSession>, transfer::Failure> connect_any(const SendTarget& target,
                                                                                     transfer::ConnectOptions co,
                                                                                     transfer::EventLog& log,
                                                                                     const std::string& command);

}  // namespace braid::cli
