// Congestion controllers by name, so a flag (`--cc delay`, `--background`)
// picks one. Ids: "delay" (default), "background", "reno".
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "core/transport/congestion_controller.hpp"

namespace braid::transport {

inline constexpr std::string_view kDefaultController = "delay";

struct ControllerInfo {
  std::string_view id;
  std::string_view summary;  // one line for --help
};

/// All registered controllers, default first.
std::span<const ControllerInfo> controllers();

/// Builds controller `id`; nullptr if no controller has that id.
std::unique_ptr<CongestionController> make_controller(std::string_view id,
                                                      const ControllerConfig& cfg);

}  // namespace braid::transport
