#include "cli/relay_command.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/units_parse.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/sender_session.hpp"

namespace braid::cli {
namespace {

struct RelayArgs {
  std::string target;
  std::string rate;
};

// Copies `from` to `to` until EOF; at most `rate` bytes/s if set (a token
// bucket of 16 KiB: a slow link's pace, not its bursts).
bool pump(int from, int to, std::optional<Rate> rate) {
  std::vector<uint8_t> buf(rate ? 4096 : 256 * 1024);
  const auto start = std::chrono::steady_clock::now();
  uint64_t moved = 0;
  for (;;) {
    ssize_t n = ::read(from, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;
    int err = 0;
    if (!lanes::send_all(to, buf.data(), static_cast<size_t>(n), err)) return false;
    moved += static_cast<uint64_t>(n);
    if (rate) {
      const auto due = start + std::chrono::nanoseconds(rate->transfer_time(Bytes(moved)).ns());
      std::this_thread::sleep_until(due - std::chrono::milliseconds(2));
    }
  }
}

void run_relay(const RelayArgs& a) {
  std::optional<Rate> rate;
  if (!a.rate.empty()) {
    rate = parse_rate(a.rate);
    if (!rate || rate->bytes_per_second() <= 0) {
      std::cerr << "braid relay: bad --rate '" << a.rate << "' (e.g. 1.5Mbit/s)\n";
      std::exit(transfer::kExitUsage);
    }
  }
  std::string error;
  auto targets = lanes::resolve_endpoint(a.target, transfer::kDefaultPort, error);
  security::UniqueFd fd;
  int err = 0;
  for (const auto& t : targets)
    if ((fd = lanes::connect_tcp(t, nullptr, 10'000, error, err)).valid()) break;
  if (!fd.valid()) {
    std::cerr << "braid relay: cannot reach " << a.target << ": " << error << "\n";
    std::exit(transfer::kExitUnreachable);
  }
  const int sock = fd.get();
  std::thread up([&] {
    pump(0, sock, rate);
    ::shutdown(sock, SHUT_WR);  // stdin ended: the lane's sender is done
  });
  pump(sock, 1, std::nullopt);  // the receiver closed: so do we
  std::cout.flush();
  std::_Exit(0);  // the stdin pump may still block in read()
}

}  // namespace

void add_relay_command(CLI::App& app) {
  auto args = std::make_shared<RelayArgs>();
  auto* cmd = app.add_subcommand("relay", "join stdin/stdout to a TCP connection (the far end of an exec: lane)");
  cmd->add_option("target", args->target, "HOST:PORT of the receiver")->required();
  cmd->add_option("--rate", args->rate, "forward stdin at most this fast (e.g. 1.5Mbit/s)");
  cmd->callback([args] { run_relay(*args); });
}

}  // namespace braid::cli
