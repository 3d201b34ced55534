#include "engine/lanes/lane_link.hpp"

#include <fcntl.h>
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

struct Hooks {
  long corrupt_lane = -1, corrupt_frame = -1;
  long kill_lane = -1;
  unsigned long long kill_after = 0;
  long stale_lane = -1;
  long flip_lane = -1, flip_frame = -1;

  Hooks() {
    if (const char* s = std::getenv("BRAID_TEST_CORRUPT_FRAME")) std::sscanf(s, "%ld:%ld", &corrupt_lane, &corrupt_frame);
    if (const char* s = std::getenv("BRAID_TEST_KILL_LANE")) std::sscanf(s, "%ld:%llu", &kill_lane, &kill_after);
    if (const char* s = std::getenv("BRAID_TEST_STALE_FRAMES")) std::sscanf(s, "%ld", &stale_lane);
    if (const char* s = std::getenv("BRAID_TEST_FLIP_DATA")) std::sscanf(s, "%ld:%ld", &flip_lane, &flip_frame);
  }
};

const Hooks& hooks() {
  static const Hooks h;
  return h;
}

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
                                                std::move(opener.value()), secret, role));
}

LaneLink::LaneLink(security::UniqueFd fd, uint32_t lane_id, uint64_t session_id, security::FrameSealer sealer,
                   security::FrameOpener opener, const security::LaneSecret& secret, security::Role role)
    : fd_(std::move(fd)),
      lane_id_(lane_id),
      session_id_(session_id),
      role_(role),
      sealer_(std::move(sealer)),
      opener_(std::move(opener)) {
  if (hooks().stale_lane == static_cast<long>(lane_id)) secret_ = secret;
  struct stat st{};
  socket_ = ::fstat(fd_.get(), &st) != 0 || S_ISSOCK(st.st_mode);
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
  if (socket_) return recv_all(fd_.get(), data, len, err);
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

bool LaneLink::write_frame(std::span<const uint8_t> bytes) {
  int err = 0;
  if (!send_bytes(bytes.data(), bytes.size(), err)) {
    send_error_ = err ? std::strerror(err) : "connection closed";
    return false;
  }
  bytes_sent_.fetch_add(bytes.size(), std::memory_order_relaxed);
  const Hooks& h = hooks();
  if (h.kill_lane == static_cast<long>(lane_id_) && bytes_sent() >= h.kill_after) {
    // Like `ss -K`: the lane's socket dies under the engine's feet.
    ::shutdown(fd_.get(), SHUT_RDWR);
  }
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
  const Hooks& h = hooks();
  if (h.flip_lane == static_cast<long>(lane_id_) && h.flip_frame == static_cast<long>(data_frames_sent_) &&
      payload_len > wire::PieceHeader::kSize)
    sealed[security::kFrameHeaderSize + payload_len - 1] ^= 0x01;  // the data's last byte, after it was hashed
  if (sealer_.seal(static_cast<uint8_t>(type), sealed.subspan(security::kFrameHeaderSize, payload_len), sealed) !=
      FrameStatus::ok)
    return false;
  run_send_hooks(sealed);
  return write_frame(sealed);
}

void LaneLink::run_send_hooks(std::span<uint8_t> sealed) {
  const Hooks& h = hooks();
  const uint64_t n = data_frames_sent_++;
  if (h.corrupt_lane == static_cast<long>(lane_id_) && h.corrupt_frame == static_cast<long>(n))
    sealed[security::kFrameHeaderSize + 100] ^= 0x10;  // inside the ciphertext
  if (h.stale_lane != static_cast<long>(lane_id_)) return;
  if (n == 0) first_data_frame_.assign(sealed.begin(), sealed.end());
  if (n != 4) return;
  // 1. A replay of this lane's first data frame.
  (void)write_frame(first_data_frame_);
  // 2. A frame from "another session" (an older one): other id, other keys.
  security::LaneSecret other;
  RAND_bytes(other.data(), static_cast<int>(other.size()));
  const auto dir = security::sending_direction(role_);
  std::vector<uint8_t> junk(64, 0xAB), out(security::sealed_frame_size(64));
  if (auto keys = security::derive_lane_keys(other, session_id_ ^ 0x5A5A, lane_id_); keys)
    if (auto s = security::FrameSealer::create(keys.value().for_direction(dir), session_id_ ^ 0x5A5A, lane_id_, dir); s)
      if (s.value().seal(static_cast<uint8_t>(wire::FrameType::piece_abort), junk, out) == FrameStatus::ok)
        (void)write_frame(out);
  // 3. A frame of this session sealed for another lane.
  if (auto keys = security::derive_lane_keys(secret_, session_id_, lane_id_ + 1000); keys)
    if (auto s = security::FrameSealer::create(keys.value().for_direction(dir), session_id_, lane_id_ + 1000, dir); s)
      if (s.value().seal(static_cast<uint8_t>(wire::FrameType::piece_abort), junk, out) == FrameStatus::ok)
        (void)write_frame(out);
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
