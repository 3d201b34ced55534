#include "engine/serve/dashboard.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <qrencode.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include <httplib.h>

#include "engine/lanes/endpoint.hpp"
#include "engine/serve/dashboard_assets.hpp"

namespace braid::serve {
namespace {

constexpr const char* kCookie = "braid_dashboard";
// An SSE stream says something at least this often, so a page notices a
// dead server and the server notices a closed page.
constexpr std::chrono::milliseconds kEventWait{2000};

std::string cookie_token(const httplib::Request& req) {
  const std::string cookies = req.get_header_value("Cookie");
  const std::string key = std::string(kCookie) + "=";
  for (size_t at = 0; at < cookies.size();) {
    size_t end = cookies.find(';', at);
    if (end == std::string::npos) end = cookies.size();
    std::string part = cookies.substr(at, end - at);
    part.erase(0, part.find_first_not_of(' '));
    if (part.rfind(key, 0) == 0) return part.substr(key.size());
    at = end + 1;
  }
  return {};
}

bool same(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void send_json(httplib::Response& res, const nlohmann::json& j) {
  res.status = j.contains("error") ? 400 : 200;
  res.set_content(j.dump(), "application/json");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string make_token() {
  unsigned char b[32];
  if (RAND_bytes(b, sizeof b) != 1) return {};
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

std::string qr_svg(const std::string& text) {
  QRcode* qr = QRcode_encodeString(text.c_str(), 0, QR_ECLEVEL_M, QR_MODE_8, 1);
  if (!qr) return {};
  const int w = qr->width, margin = 4, size = w + 2 * margin;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << size << " " << size
      << "\" shape-rendering=\"crispEdges\"><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/><path fill=\"#000\" d=\"";
  for (int y = 0; y < w; ++y)
    for (int x = 0; x < w; ++x)
      if (qr->data[y * w + x] & 1) svg << "M" << x + margin << " " << y + margin << "h1v1h-1z";
  svg << "\"/></svg>";
  QRcode_free(qr);
  return svg.str();
}

Dashboard::Dashboard(ServeApi& api, LiveSampler& live, std::string token, std::string chart_js)
    : api_(api), live_(live), token_(std::move(token)), chart_js_(std::move(chart_js)),
      server_(std::make_unique<httplib::Server>()) {}

Dashboard::~Dashboard() { stop(); }

void Dashboard::set_views(const SendRoots* roots, SendLauncher* launcher, std::filesystem::path probe_dir) {
  roots_ = roots;
  launcher_ = launcher;
  probe_dir_ = std::move(probe_dir);
}

std::string Dashboard::login_link() const {
  const bool v6 = host_.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_) + "/?token=" + token_;
}

std::string Dashboard::start(const std::string& listen) {
  const auto ep = lanes::parse_numeric_endpoint(listen, 7879);
  if (!ep) return "bad dashboard address '" + listen + "'";
  host_ = ep->host();
  auto& s = *server_;
  s.new_task_queue = [] { return new httplib::ThreadPool(6); };
  s.set_keep_alive_max_count(100);

  auto authorized = [this](const httplib::Request& req) {
    const std::string bearer = req.get_header_value("Authorization");
    if (bearer.rfind("Bearer ", 0) == 0 && same(bearer.substr(7), token_)) return true;
    return same(cookie_token(req), token_);
  };
  s.set_pre_routing_handler([this, authorized](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    if (req.path == "/" && req.has_param("token")) {
      if (!same(req.get_param_value("token"), token_)) {
        res.status = 403;
        res.set_content("braid serve: wrong token: open the login link braid serve printed\n", "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }
      res.set_header("Set-Cookie", std::string(kCookie) + "=" + token_ + "; HttpOnly; SameSite=Strict; Path=/");
      res.set_redirect("/", 303);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!authorized(req)) {
      res.status = 403;
      res.set_content("braid serve: open the login link braid serve printed (or its state directory's "
                      "dashboard.token)\n",
                      "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "POST" && req.get_header_value("X-Braid") != "1") {
      res.status = 403;
      res.set_content("braid serve: a POST needs the header X-Braid: 1\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  s.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kIndexHtml, "text/html"); });
  s.Get("/app.js", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kAppJs, "text/javascript");
  });
  s.Get("/app.css", [](const httplib::Request&, httplib::Response& res) { res.set_content(kAppCss, "text/css"); });
  s.Get("/chart.js", [this](const httplib::Request&, httplib::Response& res) {
    const std::string js = read_file(chart_js_);
    if (js.empty()) {
      res.status = 404;
      res.set_content("// Chart.js not found at " + chart_js_ + " (apt install libjs-chart.js)\n", "text/javascript");
      return;
    }
    res.set_content(js, "text/javascript");
  });
  auto op = [this](const char* name) {
    return [this, name](const httplib::Request&, httplib::Response& res) { send_json(res, api_.handle({{"op", name}})); };
  };
  s.Get("/api/live", op("live"));
  s.Get("/api/history", op("history"));
  s.Get("/api/offers", op("offers"));
  s.Get("/api/peers", op("peers"));
  s.Get(R"(/api/history/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, api_.handle({{"op", "history"}, {"id", req.matches[1].str()}}));
  });
  s.Get("/api/pairing", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json j = api_.handle({{"op", "pairing"}});
    const std::string code = j.value("code", std::string());
    j["qr_svg"] = code.empty() ? std::string() : qr_svg(code);
    send_json(res, j);
  });
  s.Post(R"(/api/offers/(\d+)/(accept|refuse))", [this](const httplib::Request& req, httplib::Response& res) {
    nlohmann::json r = {{"op", req.matches[2].str()}, {"id", req.matches[1].str()}};
    if (req.has_param("reason")) r["reason"] = req.get_param_value("reason");
    send_json(res, api_.handle(r));
  });
  s.Post("/api/peers/rename", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, api_.handle({{"op", "rename"}, {"label", req.get_param_value("label")}, {"to", req.get_param_value("to")}}));
  });
  s.Post("/api/peers/forget", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, api_.handle({{"op", "forget"}, {"label", req.get_param_value("label")}}));
  });
  s.Get("/api/roots", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json roots = nlohmann::json::array();
    if (roots_)
      for (size_t i = 0; i < roots_->roots().size(); ++i) roots.push_back({{"id", i}, {"path", roots_->roots()[i].string()}});
    send_json(res, {{"roots", roots}});
  });
  s.Get("/api/files", [this](const httplib::Request& req, httplib::Response& res) {
    if (!roots_) return send_json(res, {{"error", "no send roots are configured"}});
    size_t root = 0;
    try {
      root = std::stoul(req.get_param_value("root"));
    } catch (const std::exception&) {
      return send_json(res, {{"error", "root must be a number"}});
    }
    send_json(res, roots_->list(root, req.get_param_value("path")));
  });
  s.Post("/api/send", [this](const httplib::Request& req, httplib::Response& res) {
    if (!launcher_) return send_json(res, {{"error", "sending is not set up"}});
    const nlohmann::json r = launcher_->start(nlohmann::json::parse(req.body, nullptr, false));
    if (!r.contains("error"))
      std::cerr << "braid serve: send " << r["id"] << " started from the dashboard" << std::endl;
    send_json(res, r);
  });
  s.Get("/api/sends", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"sends", launcher_ ? launcher_->list() : nlohmann::json::array()}});
  });
  s.Get("/api/paths", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json j = paths_view(probe_dir_);
    j["probe_dir"] = probe_dir_.string();
    send_json(res, j);
  });
  s.Get("/api/events", [this](const httplib::Request&, httplib::Response& res) {
    auto seen = std::make_shared<uint64_t>(0);
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider("text/event-stream", [this, seen](size_t, httplib::DataSink& sink) {
      if (stopping_) return false;
      *seen = live_.wait_newer(*seen, kEventWait);
      if (stopping_) return false;
      const nlohmann::json ev = {{"transfers", live_.latest()}, {"offers", api_.handle({{"op", "offers"}})["offers"]}};
      const std::string msg = "event: live\ndata: " + ev.dump() + "\n\n";
      return sink.write(msg.data(), msg.size());
    });
  });

  if (ep->port() == 0) {
    port_ = s.bind_to_any_port(host_);
    if (port_ <= 0) return "cannot listen on " + listen;
  } else {
    if (!s.bind_to_port(host_, ep->port())) return "cannot listen on " + listen + " (in use?)";
    port_ = ep->port();
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return {};
}

void Dashboard::stop() {
  stopping_ = true;
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace braid::serve
