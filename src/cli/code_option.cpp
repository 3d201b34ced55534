#include "cli/code_option.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

#include "engine/security/code_strength.h"
#include "engine/security/files.h"
#include "engine/security/known_peers.h"
#include "engine/security/peer_name.h"
#include "engine/transfer/exit_codes.hpp"

namespace braid::cli {
namespace {

constexpr std::size_t kMaxCodeFile = 4096;

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// The code a --code-file holds: its one line, without surrounding blanks.
std::optional<std::string> read_code_file(const std::string& path, std::string& error) {
  std::string data;
  if (path == "-") {
    data.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      error = "cannot read --code-file '" + path + "': " + std::strerror(errno);
      return std::nullopt;
    }
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) {
      error = "cannot read --code-file '" + path + "': " + std::strerror(errno);
      return std::nullopt;
    }
  }
  if (data.size() > kMaxCodeFile) {
    error = "--code-file '" + path + "' is not a pairing code (more than " + std::to_string(kMaxCodeFile) + " bytes)";
    return std::nullopt;
  }
  std::string code = trimmed(data);
  if (code.empty()) {
    error = "--code-file '" + path + "' is empty";
    return std::nullopt;
  }
  if (code.find('\n') != std::string::npos) {
    error = "--code-file '" + path + "' has more than one line; it should hold just the code";
    return std::nullopt;
  }
  return code;
}

}  // namespace

void add_code_options(CLI::App* cmd, CodeArgs& args, const std::string& what) {
  cmd->add_option("--code,-c", args.code, what + " (shows in `ps`: prefer BRAID_CODE or --code-file)");
  cmd->add_option("--code-file", args.code_file, "Read the pairing code from this file (one line; - for standard input)");
}

ResolvedCode resolve_code(const CodeArgs& args, const char* env) {
  ResolvedCode out;
  std::vector<std::string> sources;
  if (args.code) sources.push_back("--code");
  if (args.code_file) sources.push_back("--code-file");
  const bool have_env = env != nullptr && *env != '\0';
  if (have_env) sources.push_back("BRAID_CODE");
  if (sources.size() > 1) {
    out.error = "the pairing code is given twice (" + sources[0] + " and " + sources[1] +
                "); give it one way: --code, --code-file or BRAID_CODE";
    return out;
  }
  if (args.code) {
    out.text = *args.code;
    out.visible_in_ps = true;
  } else if (args.code_file) {
    out.text = read_code_file(*args.code_file, out.error);
    if (!out.text) return out;
  } else if (have_env) {
    out.text = trimmed(env);
  } else {
    return out;
  }
  if (auto st = security::check_chosen_code(*out.text); !st) {
    out.error = st.error().message;
    out.text.reset();
  }
  return out;
}

std::optional<std::string> code_or_exit(const CodeArgs& args, const std::string& command) {
  ResolvedCode r = resolve_code(args, std::getenv("BRAID_CODE"));
  if (!r.error.empty()) {
    std::cerr << "braid " << command << ": " << r.error << std::endl;
    std::exit(transfer::kExitUsage);
  }
  if (r.visible_in_ps)
    std::cerr << "braid " << command
              << ": warning: --code can be seen by other users of this machine (ps); use BRAID_CODE=CODE or "
                 "--code-file FILE instead"
              << std::endl;
  return r.text;
}

std::string check_new_label(const std::string& label) {
  if (label.empty()) return {};
  if (!security::is_valid_peer_name(label))
    return "--name '" + label + "' is not a valid label (1 to 64 of A-Z a-z 0-9 . _ @ : + -)";
  auto dir = security::default_config_dir();
  if (!dir) return {};  // the run fails later with the reason
  auto known = security::KnownPeers::load_in(dir.value());
  if (!known) return known.error().message;
  if (const auto* e = known.value().find_label(label))
    return "--name '" + label + "': that label already names a known peer (" +
           security::short_fingerprint(e->fingerprint) + "); choose another, or `braid peers rename " + label +
           " NEW` first";
  return {};
}

std::string label_addressed(const std::string& remote) {
  std::string host = remote;
  if (!host.empty() && host.front() == '[') return {};  // an IPv6 literal is an address, never a label
  if (const auto colon = host.rfind(':'); colon != std::string::npos && host.find(':') == colon)
    host = host.substr(0, colon);
  auto dir = security::default_config_dir();
  if (!dir) return {};
  auto known = security::KnownPeers::load_in(dir.value());
  if (!known || known.value().find_label(host) == nullptr) return {};
  return host;
}

}  // namespace braid::cli
