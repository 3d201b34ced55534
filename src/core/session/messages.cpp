#include "core/session/messages.hpp"

namespace braid::session {
namespace {

template <class Variant>
Encoded encode_any(const Variant& v) {
  return std::visit(
      [](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        return Encoded{M::kType, wire::encode_message(m)};
      },
      v);
}

// Tries each alternative of the variant whose frame type matches.
template <class Variant, size_t I = 0>
std::optional<Variant> decode_any(wire::FrameType type, std::span<const uint8_t> payload) {
  if constexpr (I == std::variant_size_v<Variant>) {
    return std::nullopt;
  } else {
    using M = std::variant_alternative_t<I, Variant>;
    if (M::kType == type) {
      M m;
      if (!wire::decode(payload, m)) return std::nullopt;
      return Variant(std::move(m));
    }
    return decode_any<Variant, I + 1>(type, payload);
  }
}

}  // namespace

Encoded encode(const ToReceiver& m) { return encode_any(m); }
Encoded encode(const ToSender& m) { return encode_any(m); }

std::optional<ToSender> decode_to_sender(wire::FrameType type, std::span<const uint8_t> payload) {
  return decode_any<ToSender>(type, payload);
}
std::optional<ToReceiver> decode_to_receiver(wire::FrameType type, std::span<const uint8_t> payload) {
  return decode_any<ToReceiver>(type, payload);
}

}  // namespace braid::session
