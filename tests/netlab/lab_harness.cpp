#include "lab_harness.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace netlab::test {
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

namespace {

std::string quote(const std::string& s) { return shell_quote(s); }

std::string netlab_command(const std::string& prefix) {
  return "NETLAB_EMU=" + quote(NETLAB_EMU_PATH) + " " + quote(NETLAB_SCRIPT_PATH) + " --prefix " + quote(prefix);
}

}  // namespace

CommandResult sh(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) result.output.append(buf, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string lab_skip_reason(std::initializer_list<const char*> tools) {
  if (geteuid() != 0) return "needs root to create network namespaces and TUN devices (run the tests as root)";
  if (access("/dev/net/tun", R_OK | W_OK) != 0) return "/dev/net/tun is missing or not usable: no TUN support";
  if (sh("command -v ip").exit_code != 0) return "the 'ip' command (iproute2) is not installed";
  if (sh("command -v ping").exit_code != 0) return "'ping' (iputils-ping) is not installed";
  for (const char* tool : tools)
    if (sh(std::string("command -v ") + tool).exit_code != 0)
      return std::string("'") + tool + "' is not installed (scripts/install-deps.sh installs it)";
  return {};
}

Lab::Lab(const std::string& test_name) : prefix_("nlt-" + test_name + "-" + std::to_string(getpid())) {}

Lab::~Lab() { down(); }

std::string Lab::command() const { return netlab_command(prefix_); }

CommandResult Lab::up(const std::string& args) { return sh(netlab_command(prefix_) + " up " + args); }
CommandResult Lab::down() { return sh(netlab_command(prefix_) + " down"); }
CommandResult Lab::netlab(const std::string& args) { return sh(netlab_command(prefix_) + " " + args); }

CommandResult Lab::exec(const std::string& side, const std::string& command) {
  return sh(netlab_command(prefix_) + " exec " + side + " sh -c " + quote(command));
}

CommandResult iperf3(Lab& lab, const std::string& address, const std::string& client_args,
                     const std::string& meanwhile) {
  // Both ends at a raised priority, so that on a busy machine the test
  // measures the link and not how long iperf3 waits for a core.
  lab.exec("rcv", "nice -n -10 iperf3 -s -J -1 -D -B " + address);  // -J: --get-server-output returns JSON
  // The daemon may take a moment to listen.
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (lab.exec("rcv", "ss -Hltn 'sport = :5201' | grep -q .").exit_code == 0) break;
    usleep(100'000);
  }
  const std::string client = lab.command() + " exec snd nice -n -10 iperf3 -J -c " + address + " " + client_args;
  if (meanwhile.empty()) return sh(client);
  // Client in the background (its JSON to a file), `meanwhile` in the foreground.
  const std::string out = "/tmp/" + lab.prefix() + ".iperf3.json";
  sh("(" + client + " >" + out + " 2>&1 & " + meanwhile + "; wait)");
  CommandResult r = sh("cat " + out);
  sh("rm -f " + out);
  return r;
}

}  // namespace netlab::test
