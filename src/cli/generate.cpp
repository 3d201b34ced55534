#include "cli/generate.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <vector>

namespace braid::cli {
namespace {

// What the help's footer and the man page's sections say (one text for both).
const char* const kExamples[][2] = {
    {"braid recv", "receive into the current directory: prints its pairing code and addresses"},
    {"braid recv -d ~/in -y", "receive into ~/in, accepting every offer"},
    {"braid send big.iso photos/ 4821-chalk-lagoon-tiara-wharf", "send a file and a directory with the code recv printed: "
                                                                  "the receiver is found on the local network"},
    {"braid send -c CODE big.iso 192.168.1.20", "the same to an address (another network, or recv --no-announce)"},
    {"braid send -q --json report.json big.iso vm", "to a paired peer by its label: no code, no display, a JSON report"},
    {"braid send --backup wwan0 big.iso vm", "every interface a path; the phone's link only if the others die"},
    {"braid send --sync --delete photos/ vm", "a second run sends only what changed and removes what photos/ no longer has "
                                              "(as rsync -a --delete; --dry-run lists it first)"},
    {"braid sim --scenario scenarios/seed-5ghz.scn", "the scheduler over simulated lanes"},
    {"braid serve", "a receiver left running: prints its code and the dashboard's login link, then goes to the background"},
    {"braid history", "what braid serve received: time, peer, files, size, duration, rate, outcome"},
    {"braid offers; braid accept 3", "list the offers waiting in braid serve, accept one"},
};
const char* const kExitCodes[][2] = {
    {"0", "done: every file arrived and verified"},
    {"1", "any other failure"},
    {"2", "bad command line (a mistyped command or flag, a bad value, an output file that cannot be written)"},
    {"3", "unreachable: connect failed or timed out, or what answered is not a braid receiver"},
    {"4", "pairing failed: wrong code, or a code was needed and none given"},
    {"5", "a pinned peer presented another key (or has another key pinned for us)"},
    {"6", "the receiver refused the offer"},
    {"7", "the target directory cannot be written"},
    {"8", "disk full (the same command resumes once there is room)"},
    {"9", "a hash did not match"},
    {"10", "every lane failed before the transfer completed"},
    {"11", "partial: everything sent arrived verified, but some sources were skipped"},
    {"130, 143", "interrupted by SIGINT or SIGTERM: the same command resumes"},
};
const char kConfig[] =
    "$XDG_CONFIG_HOME/braid (else ~/.config/braid): identity.key, identity.crt, known_peers; serve.toml "
    "(braid serve's config; /etc/braid/serve.toml for root). braid serve's state: $XDG_STATE_HOME/braid (else "
    "~/.local/state/braid; /var/lib/braid for root): history/, control.sock, dashboard.token, serve.log";

// Placeholders by long option name, where the type alone says too little.
const std::map<std::string, std::string>& placeholders() {
  static const std::map<std::string, std::string> m = {
      {"json", "FILE"},        {"log", "FILE"},          {"scenario", "FILE"},       {"dir", "DIR"},
      {"code", "CODE"},        {"listen", "ADDR:PORT"},  {"lane", "LANE"},           {"event", "EVENT"},
      {"config", "FILE"},      {"state-dir", "DIR"},     {"reason", "TEXT"},
      {"chunk", "SIZE"},       {"size", "SIZE"},         {"rate-limit", "RATE"},     {"rate", "RATE"},
      {"packet-size", "BYTES|auto"}, {"clean-after", "AGE|off"}, {"older-than", "AGE"}, {"hash", "xxh3|sha256"},
      {"transport", "tcp|udp|auto"}, {"cc", "CONTROLLER"}, {"policy", "POLICY"},
      {"backup-suffix", "SUFFIX"}, {"backup-dir", "DIR"},
  };
  return m;
}

std::string long_name(const CLI::Option& o) { return o.get_lnames().empty() ? o.get_name() : o.get_lnames().front(); }

bool is_flag(const CLI::Option& o) { return o.get_expected_max() == 0; }
bool repeats(const CLI::Option& o) { return o.get_expected_max() >= CLI::detail::expected_max_vector_size; }

// The options a person sets (no help), in their order of definition.
std::vector<const CLI::Option*> options_of(const CLI::App& cmd) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : cmd.get_options())
    if (o->nonpositional() && long_name(*o) != "help" && !o->get_group().empty()) out.push_back(o);
  return out;
}

std::vector<const CLI::Option*> positionals_of(const CLI::App& cmd) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : cmd.get_options())
    if (!o->nonpositional()) out.push_back(o);
  return out;
}

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* c) { return !c->get_name().empty() && !c->get_group().empty(); });
}

// A positional's placeholder: its description when that reads like one
// ("PATH... HOST[:PORT]"), else its name in capitals.
std::string operand_text(const CLI::Option& o) {
  const std::string& d = o.get_description();
  const bool placeholder = !d.empty() && std::none_of(d.begin(), d.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
  if (placeholder) return d;
  std::string n = o.get_name();
  for (auto& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return n;
}

// ---- the man page -----------------------------------------------------------------

std::string roff(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

void man_page(const CLI::App& app, const std::string& version, std::ostream& out) {
  out << ".\\\" Generated by `braid --generate man` from the command line's own definitions: do not edit.\n";
  out << ".TH BRAID 1 \"\" \"braid " << version << "\" \"User Commands\"\n";
  out << ".SH NAME\nbraid \\- " << roff(app.get_description().substr(app.get_description().find(':') + 2)) << "\n";
  out << ".SH SYNOPSIS\n";
  for (const CLI::App* c : commands_of(app)) {
    out << ".B braid " << c->get_name() << "\n[\\fIOPTIONS\\fR]";
    for (const CLI::Option* p : positionals_of(*c)) out << " \\fI" << roff(operand_text(*p)) << "\\fR";
    out << "\n.br\n";
  }
  out << ".B braid \\-\\-version\n";
  out << ".SH DESCRIPTION\n"
         "braid moves files between two machines over every path between them at once \\(em Wi\\-Fi, Ethernet, "
         "USB tethering, a second NIC, several streams on one long fat pipe \\(em in chunks each with its own hash, "
         "encrypted and authenticated; it never writes a byte it has not verified. Run \\fBbraid recv\\fR on one "
         "machine and \\fBbraid send\\fR on the other. An interrupted transfer resumes when the same command runs "
         "again.\n";
  out << ".SH COMMANDS\n";
  for (const CLI::App* c : commands_of(app)) {
    out << ".SS \"braid " << c->get_name() << "\"\n" << roff(c->get_description()) << "\n";
    for (const CLI::Option* p : positionals_of(*c))
      out << ".TP\n\\fI" << roff(operand_text(*p)) << "\\fR\n" << roff(p->get_description()) << "\n";
    for (const CLI::Option* o : options_of(*c)) {
      out << ".TP\n";
      bool first = true;
      for (const auto& s : o->get_snames()) {
        out << (first ? "" : ", ") << "\\fB\\-" << roff(s) << "\\fR";
        first = false;
      }
      for (const auto& l : o->get_lnames()) {
        out << (first ? "" : ", ") << "\\fB\\-\\-" << roff(l) << "\\fR";
        first = false;
      }
      if (!is_flag(*o)) out << " \\fI" << roff(value_name(*o)) << "\\fR";
      if (repeats(*o)) out << " (repeatable)";
      out << "\n" << roff(o->get_description()) << "\n";
    }
  }
  out << ".SH EXAMPLES\n";
  for (const auto& e : kExamples) out << ".TP\n.B " << roff(e[0]) << "\n" << roff(e[1]) << "\n";
  out << ".SH EXIT STATUS\n";
  for (const auto& e : kExitCodes) out << ".TP\n.B " << roff(e[0]) << "\n" << roff(e[1]) << "\n";
  out << ".SH FILES\n" << roff(kConfig) << "\n";
  out << ".SH SEE ALSO\n\\fBscp\\fR(1), \\fBrsync\\fR(1)\n";
}

// ---- bash ---------------------------------------------------------------------------

// A shell word list of the choices in "a|b|c" (not in "BYTES|auto": capitals are placeholders).
std::vector<std::string> choices(const std::string& value) {
  std::vector<std::string> out;
  std::stringstream ss(value);
  std::string w;
  while (std::getline(ss, w, '|'))
    if (!w.empty() && std::none_of(w.begin(), w.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); }))
      out.push_back(w);
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

void bash_completion(const CLI::App& app, std::ostream& out) {
  std::vector<std::string> names;
  for (const CLI::App* c : commands_of(app)) names.push_back(c->get_name());
  out << "# bash completion for braid. Generated by `braid --generate bash` from the command line's own\n"
         "# definitions: do not edit.\n"
         "_braid() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd= i\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in " << join(names, "|") << ") cmd=${COMP_WORDS[i]}; break ;; esac\n"
         "  done\n"
         "  if [[ -z $cmd ]]; then\n"
         "    COMPREPLY=($(compgen -W '" << join(names, " ") << " --help --version' -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  case $cmd in\n";
  for (const CLI::App* c : commands_of(app)) {
    std::vector<std::string> flags = {"--help"};
    std::map<std::string, std::vector<std::string>> by_action;  // compgen arguments -> option names
    for (const CLI::Option* o : options_of(*c)) {
      for (const auto& s : o->get_snames()) flags.push_back("-" + s);
      for (const auto& l : o->get_lnames()) flags.push_back("--" + l);
      if (is_flag(*o)) continue;
      const std::string v = value_name(*o);
      std::string action = "";  // a value braid cannot guess: offer nothing
      if (v == "FILE") action = "-f";
      else if (v == "DIR") action = "-d";
      else if (auto ch = choices(v); !ch.empty()) action = "-W '" + join(ch, " ") + "'";
      for (const auto& s : o->get_snames()) by_action[action].push_back("-" + s);
      for (const auto& l : o->get_lnames()) by_action[action].push_back("--" + l);
    }
    out << "    " << c->get_name() << ")\n      case $prev in\n";
    for (const auto& [action, opts] : by_action) {
      out << "        " << join(opts, "|") << ") ";
      if (action.empty()) out << "return ;;\n";
      else out << "COMPREPLY=($(compgen " << action << " -- \"$cur\")); return ;;\n";
    }
    out << "      esac\n"
           "      if [[ $cur == -* ]]; then\n"
           "        COMPREPLY=($(compgen -W '" << join(flags, " ") << "' -- \"$cur\"))\n"
           "      else\n"
           "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
           "      fi ;;\n";
  }
  out << "  esac\n}\ncomplete -o filenames -o bashdefault -F _braid braid\n";
}

// ---- zsh ----------------------------------------------------------------------------

// Text inside a zsh _arguments description: no brackets, no single quotes, no colons.
std::string zsh_text(std::string s) {
  const auto stop = s.find(". ");
  if (stop != std::string::npos) s = s.substr(0, stop);
  for (auto& c : s) {
    if (c == '[') c = '(';
    else if (c == ']') c = ')';
    else if (c == '\'') c = '`';
    else if (c == ':') c = ' ';
  }
  return s;
}

void zsh_completion(const CLI::App& app, std::ostream& out) {
  out << "#compdef braid\n"
         "# zsh completion for braid. Generated by `braid --generate zsh` from the command line's own\n"
         "# definitions: do not edit.\n"
         "_braid() {\n"
         "  local -a commands\n"
         "  commands=(\n";
  for (const CLI::App* c : commands_of(app)) out << "    '" << c->get_name() << ":" << zsh_text(c->get_description()) << "'\n";
  out << "  )\n"
         "  if (( CURRENT == 2 )); then\n"
         "    _describe -t commands 'braid command' commands\n"
         "    _arguments '--help[Print help]' '--version[Print the version]'\n"
         "    return\n"
         "  fi\n"
         "  local cmd=$words[2]\n"
         "  shift words\n"
         "  (( CURRENT-- ))\n"
         "  case $cmd in\n";
  for (const CLI::App* c : commands_of(app)) {
    out << "    " << c->get_name() << ")\n      _arguments -s \\\n        '(- *)--help[Print help]' \\\n";
    for (const CLI::Option* o : options_of(*c)) {
      std::vector<std::string> names;
      for (const auto& s : o->get_snames()) names.push_back("-" + s);
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      const std::string desc = "[" + zsh_text(o->get_description()) + "]";
      std::string value;
      if (!is_flag(*o)) {
        const std::string v = value_name(*o);
        std::string action = " ";
        if (v == "FILE") action = "_files";
        else if (v == "DIR") action = "_files -/";
        else if (auto ch = choices(v); !ch.empty()) action = "(" + join(ch, " ") + ")";
        value = ":" + zsh_text(v) + ":" + action;
      }
      const std::string rep = repeats(*o) ? "*" : "";
      if (names.size() == 1) {
        out << "        '" << rep << names[0] << desc << value << "' \\\n";
      } else {
        const std::string excl = rep.empty() ? "(" + join(names, " ") + ")" : "";
        out << "        '" << excl << rep << "'{" << join(names, ",") << "}'" << desc << value << "' \\\n";
      }
    }
    for (const CLI::Option* p : positionals_of(*c))
      out << "        '" << (repeats(*p) ? "*" : "1") << ":" << zsh_text(operand_text(*p)) << ":_files' \\\n";
    out << "        && return 0 ;;\n";
  }
  out << "  esac\n}\n_braid \"$@\"\n";
}

// Help that shows placeholders, not CLI11's type names and validator ranges.
class Formatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (is_flag(*opt) || !opt->nonpositional()) return CLI::Formatter::make_option_opts(opt);
    return " " + value_name(*opt) + (repeats(*opt) ? " ..." : "");
  }
  // A positional reads as what it stands for: "PATH... HOST[:PORT]", not "operands TEXT ... REQUIRED".
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    if (!is_positional) return CLI::Formatter::make_option(opt, is_positional);
    std::stringstream out;
    CLI::detail::format_help(out, operand_text(*opt), opt->get_description() == operand_text(*opt) ? "" : opt->get_description(),
                             get_column_width());
    return out.str();
  }
  std::string make_usage(const CLI::App* app, std::string name) const override {
    const auto pos = positionals_of(*app);
    if (pos.empty()) return CLI::Formatter::make_usage(app, name);
    std::string out = "Usage: " + name + " [OPTIONS]";
    for (const CLI::Option* p : pos) out += " " + operand_text(*p);
    return out + "\n";
  }
};

}  // namespace

std::string value_name(const CLI::Option& opt) {
  if (is_flag(opt)) return "";
  if (!opt.nonpositional()) return operand_text(opt);
  const std::string name = long_name(opt);
  if (auto it = placeholders().find(name); it != placeholders().end()) return it->second;
  const std::string type = opt.get_type_name();
  // A set check ("TEXT:{keep,safe,skip}"): its members.
  const auto brace = type.find(":{");
  if (brace != std::string::npos && type.back() == '}') {
    std::string set = type.substr(brace + 2, type.size() - brace - 3);
    std::replace(set.begin(), set.end(), ',', '|');
    return set;
  }
  if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0) return "N";
  std::string up = name;
  for (auto& c : up) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return up;
}

void describe_app(CLI::App& app) {
  app.name("braid");
  app.formatter(std::make_shared<Formatter>());
  std::string footer = "Examples:\n";
  for (const auto& e : kExamples) footer += "  " + std::string(e[0]) + "\n      " + e[1] + "\n";
  footer += "Exit codes:\n";
  for (const auto& e : kExitCodes) {
    std::string code = e[0];
    code.resize(std::max<size_t>(code.size(), 9), ' ');
    footer += "  " + code + e[1] + "\n";
  }
  footer += std::string("Config: ") + kConfig;
  app.footer(footer);
}

bool generate(const CLI::App& app, const std::string& kind, const std::string& version, std::ostream& out) {
  if (kind == "man") man_page(app, version, out);
  else if (kind == "bash") bash_completion(app, out);
  else if (kind == "zsh") zsh_completion(app, out);
  else return false;
  return true;
}

}  // namespace braid::cli
