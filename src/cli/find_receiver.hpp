// `braid send`'s last operand: HOST[:PORT] as before, or a pairing code or
// a pinned peer's label, found on the local network (engine/discovery).
#pragma once

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

}  // namespace braid::cli
