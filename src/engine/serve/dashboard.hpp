// `braid serve`'s web dashboard: an HTTP server (cpp-httplib, on its own
// small thread pool) on 127.0.0.1 by default, every request checked against
// a random token. The login link http://HOST:PORT/?token=TOKEN sets it as an
// HttpOnly, SameSite=Strict cookie and redirects to the bare address, so the
// token leaves the address bar at once (Jupyter's scheme); scripts may send
// it as "Authorization: Bearer TOKEN" instead. A POST must also carry the
// header "X-Braid: 1", which a cross-site form cannot add.
//
// Pages (HTML, JS, CSS) are compiled into the binary; Chart.js is read from
// Debian's libjs-chart.js (no CDN). Live figures reach the page by
// Server-Sent Events (/api/events); everything else is the same ServeApi the
// control socket answers, plus the send view (browse the configured roots,
// start a `braid send`) and the paths view (interfaces, the last probe).
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "engine/serve/send_view.hpp"
#include "engine/serve/serve_api.hpp"

namespace httplib {
class Server;
}

namespace braid::serve {

class Dashboard {
 public:
  Dashboard(ServeApi& api, LiveSampler& live, std::string token, std::string chart_js);
  ~Dashboard();
  /// The send view (browse `roots`, start sends with `launcher`) and the
  /// paths view (probe reports in `probe_dir`); before start(). Without it
  /// both views say there is nothing.
  void set_views(const SendRoots* roots, SendLauncher* launcher, std::filesystem::path probe_dir);
  /// Binds `listen` (ADDR:PORT, port 0 picks one) and serves on a thread. Empty, or why not.
  std::string start(const std::string& listen);
  void stop();
  /// "http://127.0.0.1:7879/?token=…"
  std::string login_link() const;
  int port() const { return port_; }

 private:
  ServeApi& api_;
  LiveSampler& live_;
  std::string token_;
  std::string chart_js_;
  const SendRoots* roots_ = nullptr;
  SendLauncher* launcher_ = nullptr;
  std::filesystem::path probe_dir_;
  std::string host_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

/// 32 random bytes as hex (RAND_bytes).
std::string make_token();
/// The QR code of `text` as an SVG image (libqrencode); "" if it cannot be made.
std::string qr_svg(const std::string& text);

}  // namespace braid::serve
