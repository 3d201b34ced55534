#include "fd_bio.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace braid::security {
namespace {

FdBioState* state_of(BIO* b) { return static_cast<FdBioState*>(BIO_get_data(b)); }

// Waits until fd is ready for `events`; false on timeout or error.
bool wait_ready(FdBioState* st, short events) {
  pollfd p{st->fd, events, 0};
  for (;;) {
    int rc = ::poll(&p, 1, st->timeout_ms);
    if (rc > 0) return true;
    if (rc == 0) {
      st->timed_out = true;
      st->last_errno = ETIMEDOUT;
      return false;
    }
    if (errno != EINTR) {
      st->last_errno = errno;
      return false;
    }
  }
}

int bio_write(BIO* b, const char* data, size_t len, size_t* written) {
  FdBioState* st = state_of(b);
  BIO_clear_retry_flags(b);
  for (;;) {
    if (!wait_ready(st, POLLOUT)) return 0;
    ssize_t n = ::send(st->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == ENOTSOCK) n = ::write(st->fd, data, len);  // a pipe in tests or tools
    if (n >= 0) {
      *written = static_cast<size_t>(n);
      return 1;
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    st->last_errno = errno;
    return 0;
  }
}

int bio_read(BIO* b, char* data, size_t len, size_t* read) {
  FdBioState* st = state_of(b);
  BIO_clear_retry_flags(b);
  for (;;) {
    if (!wait_ready(st, POLLIN)) return 0;
    ssize_t n = ::recv(st->fd, data, len, MSG_DONTWAIT);
    if (n < 0 && errno == ENOTSOCK) n = ::read(st->fd, data, len);
    if (n > 0) {
      *read = static_cast<size_t>(n);
      for (size_t i = 0; i < *read && st->first_len < sizeof st->first; ++i) st->first[st->first_len++] = static_cast<unsigned char>(data[i]);
      return 1;
    }
    if (n == 0) {
      st->last_errno = 0;  // orderly end of stream
      return 0;
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    st->last_errno = errno;
    return 0;
  }
}

long bio_ctrl(BIO*, int cmd, long, void*) {
  // libssl asks to flush after each flight; writes go straight to the kernel.
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

int bio_destroy(BIO*) { return 1; }

const BIO_METHOD* fd_bio_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "braid fd");
    BIO_meth_set_write_ex(m, bio_write);
    BIO_meth_set_read_ex(m, bio_read);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    BIO_meth_set_destroy(m, bio_destroy);
    return m;
  }();
  return method;
}

}  // namespace

BIO* make_fd_bio(FdBioState* state) {
  BIO* b = BIO_new(fd_bio_method());
  if (b != nullptr) BIO_set_data(b, state);
  return b;
}

}  // namespace braid::security
