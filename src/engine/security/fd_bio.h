// An OpenSSL BIO over a descriptor the engine owns (a connected socket).
//
// Why not BIO_s_socket: it would raise SIGPIPE when the peer has gone (we
// use send(MSG_NOSIGNAL) instead, so a library never touches process-wide
// signal state); and it would block forever on a silent peer (we poll()
// with a timeout first, which also makes the handshake work on a
// non-blocking socket). The descriptor is never closed here.
#pragma once

#include <openssl/bio.h>

#include <cstddef>

namespace braid::security {

struct FdBioState {
  int fd = -1;
  int timeout_ms = -1;     // per read or write wait; -1 waits forever
  bool timed_out = false;  // set when a wait ran out
  int last_errno = 0;      // errno of the last failed call, 0 for end of stream
  // The first bytes the peer sent: when a handshake fails, they tell what
  // answered instead of a TLS peer (an HTTP or SSH server, say).
  unsigned char first[16] = {};
  std::size_t first_len = 0;
};

// A new BIO reading and writing state->fd. `state` must outlive the BIO.
BIO* make_fd_bio(FdBioState* state);

}  // namespace braid::security
