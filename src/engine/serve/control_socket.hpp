// `braid serve`'s local control channel: a Unix socket (mode 0600, in the
// state directory, so only its owner — and root — can speak to it). One
// JSON request per connection, one line; one JSON answer, one line. The
// dashboard's HTTP handlers call the same handler in process (ServeApi).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <variant>

#include <nlohmann/json.hpp>

#include "engine/security/unique_fd.h"

namespace braid::serve {

using ControlHandler = std::function<nlohmann::json(const nlohmann::json& request)>;

class ControlServer {
 public:
  ~ControlServer();
  /// Listens on `path` (a stale socket there is replaced). Empty, or why not.
  std::string start(const std::filesystem::path& path, ControlHandler handler);
  void stop();

 private:
  void loop();
  std::filesystem::path path_;
  ControlHandler handler_;
  security::UniqueFd listener_;
  security::UniqueFd wake_;  // eventfd: stop()
  std::thread thread_;
};

/// A client's request: the answer, or why there is none (no serve running).
std::variant<nlohmann::json, std::string> control_request(const std::filesystem::path& path,
                                                          const nlohmann::json& request);

}  // namespace braid::serve
