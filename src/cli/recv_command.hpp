// `braid recv --dir DIR [--listen ADDR:PORT ...] [--code CODE] [--yes]
//             [--once] [--json FILE] [--log FILE]`
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "engine/discovery/discovery.hpp"
#include "engine/transfer/event_log.hpp"
#include "engine/transfer/receiver.hpp"

namespace braid::cli {

void add_recv_command(CLI::App& app);

/// Announces a listening receiver on the local network (DNS-SD over mDNS);
/// null when there is nothing to announce or it failed (said on stderr,
/// each line starting with `who`). `recv` and `serve` share it.
std::unique_ptr<discovery::Announcer> start_announcer(const transfer::Receiver& receiver, const std::string& who);
/// At start, before any session: what interrupted transfers left in `dir`
/// that no run resumed for `age` goes (files/debris.hpp; never a running transfer's).
void clean_target(const std::string& dir, std::chrono::seconds age, transfer::EventLog& log, const std::string& who);

}  // namespace braid::cli
