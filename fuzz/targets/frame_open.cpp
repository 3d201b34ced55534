// Opening sealed lane frames (security::FrameOpener) with a fixed key: the
// receiver's first contact with every byte on a TCP lane. The first input
// byte picks a mode:
//   0  raw: the rest is a frame as it came off the wire. It is opened by a
//      strict opener (copied and in place, whole and split: the mode byte's
//      high bits give the head's size) and a window opener. Only an authentic frame may open: whenever one does, sealing
//      its plaintext again gives exactly the same bytes.
//   1  tamper: a payload is sealed, then changed as the input says (bytes
//      XORed, cut or extended), then opened — whole, split or in place. An
//      unchanged frame opens to the same type and payload; a changed one
//      never opens.
//   2  sequence: frames sealed in order are delivered in the order the
//      input says (repeats, gaps, far behind, some corrupted); each verdict
//      of the strict and the window opener matches a model of the contract
//      (strict: exactly the next counter; window: once, within 1024 of the
//      highest accepted; a forged frame changes nothing).
#include <fuzzer/FuzzedDataProvider.h>

#include <set>
#include <vector>

#include "engine/security/frame_crypto.h"
#include "fixed_keys.hpp"

using namespace braid::security;
using braid::fuzz::kLaneId;
using braid::fuzz::kSessionId;

namespace {

constexpr Direction kDir = Direction::client_to_server;

FrameOpener opener(Ordering o) {
  auto r = FrameOpener::create(braid::fuzz::fixed_lane_keys().for_direction(kDir), kSessionId, kLaneId, kDir, o);
  FUZZ_CHECK(r.ok());
  return std::move(r.value());
}

FrameSealer sealer() {
  auto r = FrameSealer::create(braid::fuzz::fixed_lane_keys().for_direction(kDir), kSessionId, kLaneId, kDir);
  FUZZ_CHECK(r.ok());
  return std::move(r.value());
}

std::vector<uint8_t> seal(FrameSealer& s, uint8_t type, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(sealed_frame_size(static_cast<uint32_t>(payload.size())));
  FUZZ_CHECK(s.seal(type, payload, out) == FrameStatus::ok);
  return out;
}

// An opened frame must be what sealing its plaintext gives (counter 0: a
// fresh strict opener accepts nothing else).
void authentic(std::span<const uint8_t> frame, const OpenedFrame& o, std::span<const uint8_t> plain) {
  FUZZ_CHECK(o.counter == 0 && o.length == plain.size());
  auto s = sealer();
  const auto again = seal(s, o.type, plain);
  FUZZ_CHECK(std::equal(again.begin(), again.end(), frame.begin(), frame.end()));
}

void raw(std::span<const uint8_t> frame, uint8_t split_hint) {
  std::vector<uint8_t> out(frame.size());
  OpenedFrame o;
  auto strict = opener(Ordering::strict);
  if (strict.open(frame, out, o) == FrameStatus::ok) authentic(frame, o, std::span(out).first(o.length));

  // In place: the plaintext lands where the ciphertext was.
  std::vector<uint8_t> buf(frame.begin(), frame.end());
  auto in_place = opener(Ordering::strict);
  if (buf.size() >= kFrameHeaderSize &&
      in_place.open(buf, std::span(buf).subspan(kFrameHeaderSize), o) == FrameStatus::ok)
    authentic(frame, o, std::span(buf).subspan(kFrameHeaderSize, o.length));

  // Split: a small head apart, the rest into a tail buffer.
  std::vector<uint8_t> head(split_hint % 80), tail(frame.size());
  auto split = opener(Ordering::strict);
  if (split.open_split(frame, head, tail, o) == FrameStatus::ok) {
    std::vector<uint8_t> plain(head.begin(), head.end());
    plain.insert(plain.end(), tail.begin(), tail.begin() + (o.length - head.size()));
    authentic(frame, o, plain);
  }

  auto window = opener(Ordering::window);
  const FrameStatus w = window.open(frame, out, o);
  FUZZ_CHECK(w == FrameStatus::ok || w == FrameStatus::bad_header || w == FrameStatus::foreign_session ||
             w == FrameStatus::foreign_lane || w == FrameStatus::wrong_direction || w == FrameStatus::forged ||
             w == FrameStatus::buffer_too_small);
}

void tamper(FuzzedDataProvider& in) {
  const uint8_t type = in.ConsumeIntegral<uint8_t>();
  const uint8_t how = in.ConsumeIntegral<uint8_t>();  // 0-2 whole / split / in place
  const size_t head_size = in.ConsumeIntegralInRange<size_t>(0, 100);
  const int edits = in.ConsumeIntegralInRange(0, 3);
  std::vector<std::pair<size_t, uint8_t>> xors;
  for (int i = 0; i < edits; ++i) xors.push_back({in.ConsumeIntegral<uint16_t>(), in.ConsumeIntegral<uint8_t>()});
  const int resize = in.ConsumeIntegralInRange(-2, 2);  // negative: cut bytes; positive: append
  const std::vector<uint8_t> payload = in.ConsumeRemainingBytes<uint8_t>();

  auto s = sealer();
  std::vector<uint8_t> frame = seal(s, type, payload);
  const std::vector<uint8_t> original = frame;
  for (auto [pos, x] : xors) frame[pos % frame.size()] ^= x;
  if (resize < 0) frame.resize(frame.size() - static_cast<size_t>(-resize));
  for (int i = 0; i < resize; ++i) frame.push_back(static_cast<uint8_t>(i));
  const bool changed = frame != original;

  auto o = opener(Ordering::strict);
  OpenedFrame opened;
  FrameStatus st;
  std::vector<uint8_t> plain;
  switch (how % 3) {
    case 0: {
      plain.resize(payload.size());
      st = o.open(frame, plain, opened);
      break;
    }
    case 1: {
      const size_t h = std::min(head_size, payload.size());
      std::vector<uint8_t> head(h), tail(payload.size() - h);
      st = o.open_split(frame, head, tail, opened);
      plain = head;
      plain.insert(plain.end(), tail.begin(), tail.end());
      break;
    }
    default: {
      std::vector<uint8_t> buf = frame;
      st = buf.size() >= kFrameHeaderSize ? o.open(buf, std::span(buf).subspan(kFrameHeaderSize), opened)
                                          : o.open(buf, {}, opened);
      if (buf.size() >= kFrameHeaderSize + payload.size())
        plain.assign(buf.begin() + kFrameHeaderSize, buf.begin() + static_cast<long>(kFrameHeaderSize + payload.size()));
      break;
    }
  }
  if (changed) {
    FUZZ_CHECK(st != FrameStatus::ok);
    FUZZ_CHECK(o.count(st) == 1);
    return;
  }
  FUZZ_CHECK(st == FrameStatus::ok);
  FUZZ_CHECK(opened.type == type && opened.counter == 0 && opened.length == payload.size());
  FUZZ_CHECK(plain == payload);
}

// 1100 frames, counters 0..1099, sealed once: enough to fall behind the
// 1024-frame window.
const std::vector<std::vector<uint8_t>>& sealed_sequence() {
  static const std::vector<std::vector<uint8_t>> frames = [] {
    std::vector<std::vector<uint8_t>> v;
    auto s = sealer();
    for (uint32_t i = 0; i < 1100; ++i) {
      const uint8_t payload[4] = {static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i), 0x5a, 0xa5};
      v.push_back(seal(s, static_cast<uint8_t>(i), payload));
    }
    return v;
  }();
  return frames;
}

void sequence(FuzzedDataProvider& in) {
  const auto& frames = sealed_sequence();
  auto strict = opener(Ordering::strict);
  auto window = opener(Ordering::window);
  uint64_t next = 0, highest = 0;
  bool any = false;
  std::set<uint64_t> seen;
  for (int step = 0; step < 64 && in.remaining_bytes() > 0; ++step) {
    const uint64_t c = in.ConsumeIntegralInRange<uint64_t>(0, frames.size() - 1);
    const bool corrupt = in.ConsumeIntegralInRange(0, 7) == 0;
    std::vector<uint8_t> frame = frames[c];
    if (corrupt) frame.back() ^= 1;  // the tag
    uint8_t out[8];
    OpenedFrame o;

    const FrameStatus s = strict.open(frame, out, o);
    const FrameStatus want_s = c < next ? FrameStatus::replayed
                               : c > next ? FrameStatus::out_of_order
                               : corrupt  ? FrameStatus::forged
                                          : FrameStatus::ok;
    FUZZ_CHECK(s == want_s);
    if (s == FrameStatus::ok) ++next;

    const FrameStatus w = window.open(frame, out, o);
    FrameStatus want_w = FrameStatus::ok;
    if (any && c <= highest) {
      if (highest - c >= 1024) want_w = FrameStatus::too_old;
      else if (seen.count(c)) want_w = FrameStatus::replayed;
    }
    if (want_w == FrameStatus::ok && corrupt) want_w = FrameStatus::forged;
    FUZZ_CHECK(w == want_w);
    if (w == FrameStatus::ok) {
      FUZZ_CHECK(o.counter == c && o.type == static_cast<uint8_t>(c) && o.length == 4);
      seen.insert(c);
      highest = any ? std::max(highest, c) : c;
      any = true;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0: raw(std::span<const uint8_t>(data + 1, size - 1), static_cast<uint8_t>(data[0] / 3)); break;
    case 1: {
      FuzzedDataProvider in(data + 1, size - 1);
      tamper(in);
      break;
    }
    default: {
      FuzzedDataProvider in(data + 1, size - 1);
      sequence(in);
      break;
    }
  }
  return 0;
}
