// Unix-domain stream sockets as lanes: a byte stream between two processes
// on one host (a container's socket, a proxy that forwards a serial link or
// a USB accessory, an ssh -L of a socket). They carry the same sealed frames
// as TCP lanes (session::LaneKind::stream).
#pragma once

#include <string>

#include "engine/security/unique_fd.h"

namespace braid::lanes {

/// `unix:PATH` → PATH; empty if `spec` does not start with "unix:".
std::string unix_path_of(const std::string& spec);
/// A listening socket at `path`. A stale socket file left there (nobody
/// listening) is replaced; any other file is not touched.
security::UniqueFd listen_unix(const std::string& path, std::string& error);
security::UniqueFd connect_unix(const std::string& path, std::string& error);
/// The socket is a Unix-domain one (a lane from listen_unix).
bool is_unix_socket(int fd);
/// "unix:PATH" of the socket's own address (the listener's path), or "unix".
std::string unix_socket_name(int fd);

}  // namespace braid::lanes
