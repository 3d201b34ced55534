#include "core/transport/cc_registry.hpp"

#include <array>

#include "core/transport/background_controller.hpp"
#include "core/transport/delay_controller.hpp"
#include "core/transport/reno_controller.hpp"

namespace braid::transport {

namespace {

using Factory = std::unique_ptr<CongestionController> (*)(const ControllerConfig&);

struct Entry {
  ControllerInfo info;
  Factory make;
};

template <class T>
std::unique_ptr<CongestionController> build(const ControllerConfig& cfg) {
  return std::make_unique<T>(cfg);
}

const std::array<Entry, 3> kEntries = {{
    {{"delay", "model-based (bottleneck rate x min RTT), holds the queue within a few ms"},
     &build<DelayController>},
    {{"background", "LEDBAT-style scavenger: yields to other traffic, returns when it leaves"},
     &build<BackgroundController>},
    {{"reno", "NewReno (RFC 9002 section 7), loss-based reference"}, &build<RenoController>},
}};

const std::array<ControllerInfo, 3> kInfos = {kEntries[0].info, kEntries[1].info, kEntries[2].info};

}  // namespace

std::span<const ControllerInfo> controllers() { return kInfos; }

std::unique_ptr<CongestionController> make_controller(std::string_view id,
                                                      const ControllerConfig& cfg) {
  for (const auto& e : kEntries) {
    if (e.info.id == id) return e.make(cfg);
  }
  return nullptr;
}

}  // namespace braid::transport
