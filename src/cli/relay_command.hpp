// `braid relay [--rate RATE] HOST:PORT`: joins its stdin and stdout to a TCP
// connection, byte for byte. The far end of a byte-stream lane: `braid send
// --lane 'exec:ssh host braid relay 127.0.0.1:7878'` reaches a receiver
// through ssh (the lane's frames are sealed end to end: the relay sees only
// ciphertext). `--rate` paces what it forwards from stdin, as a slow link
// (a serial line, Bluetooth) would.
#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

void add_relay_command(CLI::App& app);

}  // namespace braid::cli
