// Helpers for tests that build a real lab: run shell commands, bring a lab
// up under a prefix of the test's own (tests run in parallel), and always
// take it down again.
#pragma once

#include <string>

namespace netlab::test {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/// Runs `command` with /bin/sh and returns its exit code and output.
CommandResult sh(const std::string& command);

/// Why a lab test cannot run here, or "" if it can. `tools` are commands
/// the test needs besides ip (e.g. "iperf3").
std::string lab_skip_reason(std::initializer_list<const char*> tools = {});

/// A lab for the lifetime of the object. Its namespaces are named after the
/// test and the process id, so parallel tests never share one.
class Lab {
 public:
  explicit Lab(const std::string& test_name);
  ~Lab();
  Lab(const Lab&) = delete;
  Lab& operator=(const Lab&) = delete;

  /// `netlab up ARGS`; the result says whether it worked and why not.
  CommandResult up(const std::string& args);
  CommandResult down();
  /// Runs `command` (shell syntax) in "snd" or "rcv".
  CommandResult exec(const std::string& side, const std::string& command);
  /// Any other netlab subcommand: "stats --json", "event ...".
  CommandResult netlab(const std::string& args);

  const std::string& prefix() const { return prefix_; }
  /// The shell words that run netlab for this lab, to compose commands with.
  std::string command() const;

 private:
  std::string prefix_;
};

/// Starts a one-off iperf3 server on `address` in the receiver namespace and
/// runs a client against it from the sender; returns iperf3's JSON output.
/// `client_args` are extra client options ("-t 4 -O 1"). `meanwhile`, if
/// given, is a shell command run on the host while the client runs (e.g.
/// "sleep 2; netlab event ..."), so events can be timed against the traffic.
CommandResult iperf3(Lab& lab, const std::string& address, const std::string& client_args,
                     const std::string& meanwhile = "");

/// Single-quotes `s` for /bin/sh.
std::string shell_quote(const std::string& s);

}  // namespace netlab::test
