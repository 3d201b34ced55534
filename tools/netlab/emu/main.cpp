// netlab-emu: the user-space link emulator behind `netlab` (docs/netlab.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "emu/emulator.hpp"
#include "model/spec_parser.hpp"

namespace {

using netlab::EmulatorOptions;

std::string netns_path(const std::string& name_or_path) {
  return name_or_path.find('/') == std::string::npos ? "/run/netns/" + name_or_path : name_or_path;
}

/// Config file: one directive per line, `link SPEC`, `event SPEC` or
/// `seed N`; '#' starts a comment.
bool read_config(const std::string& path, std::vector<std::string>& links, std::vector<std::string>& events,
                 std::uint64_t& seed, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read config " + path;
    return false;
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line.erase(0, first);
    line.erase(line.find_last_not_of(" \t\r") + 1);
    const auto space = line.find_first_of(" \t");
    const std::string word = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
    if (word == "link") links.push_back(rest);
    else if (word == "event") events.push_back(rest);
    else if (word == "seed") seed = std::stoull(rest);
    else {
      error = path + ":" + std::to_string(number) + ": expected 'link', 'event' or 'seed', got '" + word + "'";
      return false;
    }
  }
  return true;
}

bool parse_specs(const std::vector<std::string>& links, const std::vector<std::string>& events,
                 EmulatorOptions& options, std::string& error) {
  for (const auto& text : links) {
    auto link = netlab::parse_link(text);
    if (!link) {
      error = link.error;
      return false;
    }
    for (const auto& other : options.links)
      if (other.name == link.value->name) {
        error = "two links are named '" + other.name + "'";
        return false;
      }
    options.links.push_back(std::move(*link.value));
  }
  for (const auto& text : events) {
    auto parsed = netlab::parse_event(text);
    if (!parsed) {
      error = parsed.error;
      return false;
    }
    for (auto& e : *parsed.value) {
      const bool known = e.link == "*" || std::any_of(options.links.begin(), options.links.end(),
                                                      [&](const auto& l) { return l.name == e.link; });
      if (!known) {
        error = "event '" + text + "' names unknown link '" + e.link + "'";
        return false;
      }
      options.events.push_back(std::move(e));
    }
  }
  return true;
}

/// Forks; the parent waits until the child has written its pidfile and then
/// exits, so "netlab-emu --daemon returned 0" means "the lab is forwarding".
/// Returns only in the child.
void daemonise(const std::string& pidfile, const std::string& log) {
  int ready[2];
  if (pipe(ready) != 0) {
    std::perror("netlab-emu: pipe");
    std::exit(1);
  }
  const pid_t child = fork();
  if (child < 0) {
    std::perror("netlab-emu: fork");
    std::exit(1);
  }
  if (child > 0) {
    close(ready[1]);
    char ok = 0;
    const bool started = read(ready[0], &ok, 1) == 1 && ok == 'k';
    std::exit(started ? 0 : 1);
  }
  close(ready[0]);
  setsid();
  const int null_fd = open("/dev/null", O_RDWR);
  const int log_fd = log.empty() ? null_fd : open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  dup2(null_fd, 0);
  dup2(log_fd, 1);
  dup2(log_fd, 2);
  if (!pidfile.empty()) {
    std::ofstream(pidfile) << getpid() << "\n";
  }
  const char ok = 'k';
  if (write(ready[1], &ok, 1) != 1) std::exit(1);
  close(ready[1]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"netlab-emu: forwards packets between TUN devices in two network namespaces through an emulated link "
               "(rate, delay, jitter, loss, queue, CoDel, timed events). Usually started by `netlab up`."};
  std::vector<std::string> link_texts, event_texts;
  std::string config, snd_ns, rcv_ns, pidfile, log;
  EmulatorOptions options;
  bool daemon = false, check = false;
  app.add_option("--link", link_texts, "link: NAME[:key=value,...], see docs/netlab.md");
  app.add_option("--event", event_texts, "timed event, relative to the start: [at=T,]link=NAME,ACTION...");
  app.add_option("--config", config, "file with 'link SPEC', 'event SPEC' and 'seed N' lines");
  app.add_option("--seed", options.seed, "seed for loss and jitter (default 1)");
  app.add_option("--snd-ns", snd_ns, "sender namespace (name in /run/netns, or a path)");
  app.add_option("--rcv-ns", rcv_ns, "receiver namespace (name in /run/netns, or a path)");
  app.add_option("--control", options.control_fifo, "FIFO to read event lines (or 'stats') from at run time");
  app.add_option("--stats-json", options.stats_json_path, "write counters as JSON here on SIGUSR1 and at exit");
  app.add_option("--stats-text", options.stats_text_path, "write counters as text here on SIGUSR1 and at exit");
  app.add_option("--trace", options.trace_path,
                 "write a line per packet as it enters and leaves a link here (times, ports, TCP seq/ack, length)");
  app.add_flag("--daemon", daemon, "run in the background once the devices exist");
  app.add_option("--pidfile", pidfile, "with --daemon: write the emulator's pid here");
  app.add_option("--log", log, "with --daemon: append messages and counters here");
  bool no_realtime = false;
  app.add_flag("--no-realtime", no_realtime, "stay at normal priority (default: SCHED_FIFO 10, for on-time delivery)");
  app.add_flag("--check", check, "only parse links and events, print what they mean, and exit");
  CLI11_PARSE(app, argc, argv);
  options.realtime = !no_realtime;

  std::string error;
  if (!config.empty() && !read_config(config, link_texts, event_texts, options.seed, error)) {
    std::fprintf(stderr, "netlab-emu: %s\n", error.c_str());
    return 2;
  }
  if (!parse_specs(link_texts, event_texts, options, error)) {
    std::fprintf(stderr, "netlab-emu: %s\n", error.c_str());
    return 2;
  }
  if (options.links.empty()) {
    std::fprintf(stderr, "netlab-emu: no links given (--link NAME:rate=...,delay=...)\n");
    return 2;
  }
  if (check) {
    netlab::LabModel lab(options.links, options.seed);
    std::fputs(netlab::stats_json(lab, std::vector<netlab::IoCounters>(options.links.size() * 2), 0,
                                  netlab::at(netlab::Duration{0}))
                   .dump(2)
                   .c_str(),
               stdout);
    std::fputs("\n", stdout);
    return 0;
  }
  if (snd_ns.empty() || rcv_ns.empty()) {
    std::fprintf(stderr, "netlab-emu: --snd-ns and --rcv-ns are required: links only exist between namespaces\n");
    return 2;
  }
  options.snd_netns = netns_path(snd_ns);
  options.rcv_netns = netns_path(rcv_ns);

  // Block the signals the loop reads from its signalfd before anything else,
  // so none is delivered the default way (which would kill us silently).
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaddset(&signals, s);
  sigprocmask(SIG_BLOCK, &signals, nullptr);

  auto emu = netlab::Emulator::create(options, error);
  if (!emu) {
    std::fprintf(stderr, "netlab-emu: %s\n", error.c_str());
    return 1;
  }
  if (daemon) daemonise(pidfile, log);
  const int rc = emu->run();
  if (daemon && !pidfile.empty()) unlink(pidfile.c_str());
  return rc;
}
