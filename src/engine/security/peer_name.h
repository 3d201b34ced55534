// The name a host calls itself (stored in its certificate, written in other
// hosts' known-peers files, printed in messages). It comes from the peer, so
// it is untrusted: only a short, plain alphabet is accepted, which keeps the
// known-peers file parseable and terminal escape sequences off the screen.
#pragma once

#include <string>
#include <string_view>

namespace braid::security {

constexpr std::size_t kMaxPeerNameLength = 64;

// 1..64 characters from [A-Za-z0-9._@:+-].
bool is_valid_peer_name(std::string_view name);

// Turns any text (e.g. a hostname) into a valid name: other characters become
// '-', it is cut to 64, and an empty result becomes "braid-host".
std::string sanitize_peer_name(std::string_view text);

// This machine's hostname, sanitized: the default name of a new identity.
std::string default_peer_name();

}  // namespace braid::security
