// The pairing code on the command line, for send and recv: one of --code
// TEXT, --code-file PATH (one line; "-" reads standard input) or the
// BRAID_CODE environment variable — the last two keep it out of `ps`.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace braid::cli {

struct CodeArgs {
  std::optional<std::string> code;       // --code
  std::optional<std::string> code_file;  // --code-file
};

// Adds --code (described by `what`) and --code-file to `cmd`.
void add_code_options(CLI::App* cmd, CodeArgs& args, const std::string& what);

struct ResolvedCode {
  std::optional<std::string> text;  // the code, if one was given
  std::string error;                // non-empty: one line for the user; exit 2
  bool visible_in_ps = false;       // given as --code: warn once
};

// The code from exactly one source, checked: more than one source, an
// unreadable or empty file, or a weak or mistyped code is an error
// (security::check_chosen_code). `env` is BRAID_CODE's value (null: unset;
// empty counts as unset).
ResolvedCode resolve_code(const CodeArgs& args, const char* env);

// resolve_code with BRAID_CODE from the environment; on an error prints
// "braid CMD: ERROR" and exits 2; for --code, warns once on stderr.
std::optional<std::string> code_or_exit(const CodeArgs& args, const std::string& command);

// Why `--name LABEL` cannot be used ("" if it can, or if it is empty): not
// a valid label, or already the label of a known peer in this host's
// known_peers (checked before any pairing, so a pairing never fails for it).
std::string check_new_label(const std::string& label);

// The known-peers label `remote` (HOST[:PORT], [V6]:PORT) addresses, if its
// HOST part is one: the receiver must then present that label's key, or the
// send is refused loudly (ConnectOptions::peer_label). "" otherwise.
std::string label_addressed(const std::string& remote);

}  // namespace braid::cli
