#include "frame_crypto.h"

#include <openssl/core_names.h>

namespace braid::security {
namespace {

Result<ossl::CipherCtx> make_ctx(const DirectionKeys& keys, bool encrypt) {
  // Fetch once here; later inits pass no cipher and no key, so OpenSSL keeps
  // the expanded key and only takes a new nonce.
  ossl::Cipher cipher(EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr));
  ossl::CipherCtx ctx(EVP_CIPHER_CTX_new());
  if (!cipher || !ctx) return ossl::crypto_error("AES-256-GCM is not available");
  int ok = encrypt ? EVP_EncryptInit_ex2(ctx.get(), cipher.get(), keys.key.data(), nullptr, nullptr)
                   : EVP_DecryptInit_ex2(ctx.get(), cipher.get(), keys.key.data(), nullptr, nullptr);
  if (ok != 1) return ossl::crypto_error("cannot set up AES-256-GCM");
  return ctx;
}

void make_nonce(const Secret<kNonceSize>& salt, std::uint64_t counter, std::uint8_t (&nonce)[kNonceSize]) {
  for (std::size_t i = 0; i < kNonceSize; ++i) nonce[i] = salt.data()[i];
  for (int i = 0; i < 8; ++i) nonce[kNonceSize - 1 - i] ^= static_cast<std::uint8_t>(counter >> (8 * i));
}

bool overlaps(const std::uint8_t* a, std::size_t alen, const std::uint8_t* b, std::size_t blen) {
  return alen > 0 && blen > 0 && a < b + blen && b < a + alen;
}

}  // namespace

Result<FrameSealer> FrameSealer::create(const DirectionKeys& keys, std::uint64_t session_id, std::uint32_t lane_id,
                                        Direction direction, SealLimits limits) {
  auto ctx = make_ctx(keys, true);
  if (!ctx) return ctx.error();
  FrameSealer s;
  s.ctx_ = std::move(ctx.value());
  s.salt_ = keys.nonce_salt;
  s.session_id_ = session_id;
  s.lane_id_ = lane_id;
  s.direction_ = direction;
  s.limits_ = limits;
  if (s.limits_.max_frames == UINT64_MAX) s.limits_.max_frames = UINT64_MAX - 1;  // 2^64-1 is never a counter
  return s;
}

FrameStatus FrameSealer::seal(std::uint8_t type, std::span<const std::uint8_t> payload, std::span<std::uint8_t> out) {
  if (payload.size() > kMaxFramePayload || out.size() < sealed_frame_size(static_cast<std::uint32_t>(payload.size())))
    return FrameStatus::buffer_too_small;
  std::uint8_t* body = out.data() + kFrameHeaderSize;
  if (payload.data() != body && overlaps(payload.data(), payload.size(), out.data(), out.size()))
    return FrameStatus::buffer_too_small;  // partial overlap would corrupt the input; refuse rather than guess
  if (next_counter_ >= limits_.max_frames) return FrameStatus::counter_exhausted;
  if (payload.size() > limits_.max_bytes - bytes_sealed_) return FrameStatus::key_exhausted;

  FrameHeader h;
  h.type = type;
  h.direction = direction_;
  h.length = static_cast<std::uint32_t>(payload.size());
  h.session_id = session_id_;
  h.lane_id = lane_id_;
  h.counter = next_counter_;
  auto header = out.first<kFrameHeaderSize>();
  encode_frame_header(h, header);

  std::uint8_t nonce[kNonceSize];
  make_nonce(salt_, next_counter_, nonce);
  int len = 0;
  bool ok = EVP_EncryptInit_ex2(ctx_.get(), nullptr, nullptr, nonce, nullptr) == 1 &&
            EVP_EncryptUpdate(ctx_.get(), nullptr, &len, header.data(), static_cast<int>(kFrameHeaderSize)) == 1 &&
            EVP_EncryptUpdate(ctx_.get(), body, &len, payload.data(), static_cast<int>(payload.size())) == 1 &&
            EVP_EncryptFinal_ex(ctx_.get(), body + payload.size(), &len) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx_.get(), EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kFrameTagSize),
                                body + payload.size()) == 1;
  if (!ok) {
    // Cannot happen with valid inputs; still never return a half-sealed frame as ok.
    ossl::drain_errors();
    return FrameStatus::key_exhausted;
  }
  ++next_counter_;
  bytes_sealed_ += payload.size();
  return FrameStatus::ok;
}

Result<FrameOpener> FrameOpener::create(const DirectionKeys& keys, std::uint64_t session_id, std::uint32_t lane_id,
                                        Direction direction, Ordering ordering) {
  auto ctx = make_ctx(keys, false);
  if (!ctx) return ctx.error();
  FrameOpener o;
  o.ctx_ = std::move(ctx.value());
  o.salt_ = keys.nonce_salt;
  o.session_id_ = session_id;
  o.lane_id_ = lane_id;
  o.direction_ = direction;
  o.ordering_ = ordering;
  return o;
}

FrameStatus FrameOpener::open(std::span<const std::uint8_t> frame, std::span<std::uint8_t> out, OpenedFrame& opened) {
  FrameStatus s = open_impl(frame, out, {}, opened);
  ++stats_[static_cast<std::size_t>(s)];
  return s;
}

FrameStatus FrameOpener::open_split(std::span<const std::uint8_t> frame, std::span<std::uint8_t> head,
                                    std::span<std::uint8_t> tail, OpenedFrame& opened) {
  FrameStatus s = open_impl(frame, head, tail, opened);
  ++stats_[static_cast<std::size_t>(s)];
  return s;
}

// `tail` empty: the whole plaintext goes to `head` (open). Otherwise the
// first head.size() bytes go to `head` and the rest to `tail` (open_split).
FrameStatus FrameOpener::open_impl(std::span<const std::uint8_t> frame, std::span<std::uint8_t> head,
                                   std::span<std::uint8_t> tail, OpenedFrame& opened) {
  if (frame.size() < kFrameOverhead) return FrameStatus::bad_header;
  auto header = frame.first<kFrameHeaderSize>();
  FrameHeader h;
  if (decode_frame_header(header, h) != FrameStatus::ok || frame.size() != sealed_frame_size(h.length))
    return FrameStatus::bad_header;
  const bool split = !tail.empty();
  const std::size_t head_len = split ? head.size() : h.length;
  if (split ? (h.length < head_len || tail.size() < h.length - head_len) : head.size() < h.length)
    return FrameStatus::buffer_too_small;
  const std::uint8_t* body = frame.data() + kFrameHeaderSize;
  // Each output part must be either where its ciphertext is (in place) or
  // clear of the frame: a partial overlap would corrupt the input.
  if (head.data() != body && overlaps(head.data(), head_len, frame.data(), frame.size()))
    return FrameStatus::buffer_too_small;
  const std::size_t tail_len = h.length - head_len;
  if (split && tail.data() != body + head_len && overlaps(tail.data(), tail_len, frame.data(), frame.size()))
    return FrameStatus::buffer_too_small;

  // Cheap checks on the clear header first. They sort harmless strays from
  // attacks; a frame lying about these fields still fails the tag below.
  if (h.session_id != session_id_) return FrameStatus::foreign_session;
  if (h.lane_id != lane_id_) return FrameStatus::foreign_lane;
  if (h.direction != direction_) return FrameStatus::wrong_direction;
  if (ordering_ == Ordering::strict) {
    if (h.counter < next_counter_) return FrameStatus::replayed;
    if (h.counter > next_counter_) return FrameStatus::out_of_order;
  } else if (FrameStatus w = window_.check(h.counter); w != FrameStatus::ok) {
    return w;
  }

  std::uint8_t nonce[kNonceSize];
  make_nonce(salt_, h.counter, nonce);
  int len = 0;
  std::uint8_t final_out[16];  // GCM's final step writes nothing; a valid pointer all the same
  bool ok = EVP_DecryptInit_ex2(ctx_.get(), nullptr, nullptr, nonce, nullptr) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx_.get(), EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kFrameTagSize),
                                const_cast<std::uint8_t*>(body + h.length)) == 1 &&
            EVP_DecryptUpdate(ctx_.get(), nullptr, &len, header.data(), static_cast<int>(kFrameHeaderSize)) == 1 &&
            EVP_DecryptUpdate(ctx_.get(), head.data(), &len, body, static_cast<int>(head_len)) == 1 &&
            (tail_len == 0 ||
             EVP_DecryptUpdate(ctx_.get(), tail.data(), &len, body + head_len, static_cast<int>(tail_len)) == 1) &&
            EVP_DecryptFinal_ex(ctx_.get(), final_out, &len) == 1;
  if (!ok) {
    ossl::drain_errors();
    return FrameStatus::forged;
  }
  if (ordering_ == Ordering::strict) ++next_counter_;
  else window_.accept(h.counter);
  opened.type = h.type;
  opened.counter = h.counter;
  opened.length = h.length;
  return FrameStatus::ok;
}

}  // namespace braid::security
