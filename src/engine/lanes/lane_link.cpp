#include "engine/lanes/lane_link.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "engine/lanes/tcp.hpp"
#include "engine/security/frame_format.h"

namespace braid::lanes {
namespace {

using security::FrameStatus;

}  // namespace

std::unique_ptr<LaneLink> LaneLink::create(security::UniqueFd fd, uint64_t session_id, uint32_t lane_id,
                                           const security::LaneSecret& secret, security::Role role, std::string& error) {
  auto keys = security::derive_lane_keys(secret, session_id, lane_id);
  if (!keys) {
    error = keys.error().message;
    return nullptr;
  }
  const auto out_dir = security::sending_direction(role);
  const auto in_dir = security::receiving_direction(role);
  auto sealer = security::FrameSealer::create(keys.value().for_direction(out_dir), session_id, lane_id, out_dir);
  auto opener = security::FrameOpener::create(keys.value().for_direction(in_dir), session_id, lane_id, in_dir);
  if (!sealer || !opener) {
    error = !sealer ? sealer.error().message : opener.error().message;
    return nullptr;
  }
  return std::unique_ptr<LaneLink>(new LaneLink(std::move(fd), lane_id, session_id, std::move(sealer.value()),
                                                std::move(opener.value()), role));
}

LaneLink::LaneLink(security::UniqueFd fd, uint32_t lane_id, uint64_t session_id, security::FrameSealer sealer,
                   security::FrameOpener opener, security::Role role)
    : fd_(std::move(fd)),
      lane_id_(lane_id),
      session_id_(session_id),
      role_(role),
      sealer_(std::move(sealer)),
      opener_(std::move(opener)) {
  struct stat st{};
  socket_ = ::fstat(fd_.get(), &st) != 0 || S_ISSOCK(st.st_mode);
  int protocol = 0;
  socklen_t protocol_len = sizeof protocol;
  tcp_ = socket_ && ::getsockopt(fd_.get(), SOL_SOCKET, SO_PROTOCOL, &protocol, &protocol_len) == 0 &&
         protocol == IPPROTO_TCP;
  if (!socket_) ::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) | O_NONBLOCK);
}

namespace {
// One poll slice: short enough that a shutdown() is noticed at once by a
// person's standards, long enough to cost nothing while data flows.
constexpr int kPollSliceMs = 50;
}  // namespace

bool LaneLink::send_bytes(const uint8_t* data, size_t len, int& err) {
  if (socket_) return send_all(fd_.get(), data, len, err);
  while (len > 0) {
    if (shut_) {
      err = ECONNABORTED;
      return false;
    }
    ssize_t n = ::write(fd_.get(), data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd_.get(), POLLOUT, 0};
        ::poll(&p, 1, kPollSliceMs);
        continue;
      }
      err = errno;
      return false;
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool LaneLink::recv_bytes(uint8_t* data, size_t len, int& err) {
  if (socket_) return recv_all(fd_.get(), data, len, err, tcp_);
  while (len > 0) {
    if (shut_) {
      err = ECONNABORTED;
      return false;
    }
    ssize_t n = ::read(fd_.get(), data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd_.get(), POLLIN, 0};
        ::poll(&p, 1, kPollSliceMs);
        continue;
      }
      err = errno;
      return false;
    }
    if (n == 0) {
      err = 0;
      return false;
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

LaneLink::~LaneLink() = default;

uint64_t LaneLink::rejected_total() const {
  uint64_t t = 0;
  for (const auto& r : rejected_) t += r.load();
  return t;
}

std::string LaneLink::send_error() const { return send_error_; }

void LaneLink::shutdown() {
  if (!shut_.exchange(true) && socket_) ::shutdown(fd_.get(), SHUT_RDWR);
}

void LaneLink::shutdown_write() {
  if (!shut_.load() && socket_) ::shutdown(fd_.get(), SHUT_WR);
}

bool LaneLink::write_frame(std::span<const uint8_t> bytes) {
  int err = 0;
  if (!send_bytes(bytes.data(), bytes.size(), err)) {
    send_error_ = err ? std::strerror(err) : "connection closed";
    return false;
  }
  bytes_sent_.fetch_add(bytes.size(), std::memory_order_relaxed);
  return true;
}

bool LaneLink::send(wire::FrameType type, std::span<const uint8_t> payload) {
  std::vector<uint8_t> frame(security::sealed_frame_size(static_cast<uint32_t>(payload.size())));
  std::lock_guard lock(send_mu_);
  if (shut_) return false;
  if (sealer_.seal(static_cast<uint8_t>(type), payload, frame) != FrameStatus::ok) return false;
  return write_frame(frame);
}

bool LaneLink::send_in_place(wire::FrameType type, std::span<uint8_t> frame, size_t payload_len) {
  const size_t total = security::sealed_frame_size(static_cast<uint32_t>(payload_len));
  std::span<uint8_t> sealed = frame.first(total);
  std::lock_guard lock(send_mu_);
  if (shut_) return false;
  if (faults_) faults_->before_seal(lane_id_, data_frames_sent_, sealed.subspan(security::kFrameHeaderSize, payload_len));
  if (sealer_.seal(static_cast<uint8_t>(type), sealed.subspan(security::kFrameHeaderSize, payload_len), sealed) !=
      FrameStatus::ok)
    return false;
  ++data_frames_sent_;
  return write_frame(sealed);
}

Incoming LaneLink::read(const Landing* landing) {
  Incoming in;
  if (rbuf_.size() < security::kFrameHeaderSize) rbuf_.resize(64 * 1024);
  int err = 0;
  auto closed = [&](const char* what) {
    in.status = ReadStatus::closed;
    in.reason = err ? std::string(what) + ": " + std::strerror(err) : "the connection was closed by the peer";
    if (shut_) in.reason = "closed locally";
    return in;
  };
  if (!recv_bytes(rbuf_.data(), security::kFrameHeaderSize, err)) return closed("read failed");
  security::FrameHeader h;
  auto header = std::span<const uint8_t, security::kFrameHeaderSize>(rbuf_.data(), security::kFrameHeaderSize);
  if (security::decode_frame_header(header, h) != FrameStatus::ok) {
    in.status = ReadStatus::broken;
    in.frame_status = FrameStatus::bad_header;
    in.reason = "a malformed frame header (the stream's framing is lost)";
    rejected_[static_cast<size_t>(FrameStatus::bad_header)]++;
    return in;
  }
  const size_t total = security::sealed_frame_size(h.length);
  if (rbuf_.size() < total) rbuf_.resize(total);
  if (!recv_bytes(rbuf_.data() + security::kFrameHeaderSize, total - security::kFrameHeaderSize, err))
    return closed("read failed");
  bytes_received_.fetch_add(total, std::memory_order_relaxed);
  security::OpenedFrame opened;
  std::span<uint8_t> frame(rbuf_.data(), total);
  std::span<uint8_t> body = frame.subspan(security::kFrameHeaderSize, h.length);
  const bool lands = landing && h.type == static_cast<uint8_t>(landing->type) && h.length >= landing->skip &&
                     h.length - landing->skip <= landing->tail.size();
  const FrameStatus st =
      lands ? opener_.open_split(frame, body.first(landing->skip), landing->tail.first(h.length - landing->skip), opened)
            : opener_.open(frame, body, opened);
  in.frame_status = st;
  if (st == FrameStatus::ok) {
    in.status = ReadStatus::frame;
    in.type = static_cast<wire::FrameType>(opened.type);
    in.payload = body.first(lands ? landing->skip : opened.length);
    if (lands) in.landed = landing->tail.first(h.length - landing->skip);
    return in;
  }
  rejected_[static_cast<size_t>(st)]++;
  in.status = security::frame_status_closes_lane(st) ? ReadStatus::broken : ReadStatus::rejected;
  in.reason = std::string("a frame was rejected: ") + std::string(security::frame_status_name(st));
  if (st == FrameStatus::forged) in.reason = "a forged or corrupted frame (authentication failed)";
  return in;
}

}  // namespace braid::lanes
