#include "engine/serve/share_server.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <qrencode.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <iostream>

#include <httplib.h>

#include "engine/lanes/endpoint.hpp"
#include "engine/serve/share_assets.hpp"

namespace braid::serve {
namespace {

// A chunk is 1 MiB; an upload's start carries 64 hex digits per MiB of the
// file (6.5 MB for 100 GiB). Nothing larger is read.
constexpr size_t kMaxRequestBody = 16u << 20;

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void send_json(httplib::Response& res, int status, const nlohmann::json& j) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

bool loopback_v4(const std::string& addr) { return addr.rfind("127.", 0) == 0; }

std::optional<uint64_t> free_bytes(const std::filesystem::path& dir) {
  struct statvfs st{};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace

std::vector<std::string> host_ipv4_addresses(bool loopback) {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    char text[INET_ADDRSTRLEN];
    const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (!::inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text)) continue;
    if (!loopback && loopback_v4(text)) continue;
    if (std::find(out.begin(), out.end(), text) == out.end()) out.emplace_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

std::string qr_terminal(const std::string& text) {
  QRcode* qr = QRcode_encodeString(text.c_str(), 0, QR_ECLEVEL_L, QR_MODE_8, 1);
  if (!qr) return {};
  const int w = qr->width, margin = 2, size = w + 2 * margin;
  // Light modules are drawn: a dark terminal's background is the code's dark.
  auto light = [&](int x, int y) {
    x -= margin;
    y -= margin;
    if (x < 0 || y < 0 || x >= w || y >= w) return true;
    return (qr->data[y * w + x] & 1) == 0;
  };
  std::string out;
  for (int y = 0; y < size; y += 2) {
    for (int x = 0; x < size; ++x) {
      const bool top = light(x, y), bottom = y + 1 < size ? light(x, y + 1) : false;
      out += top && bottom ? "\u2588" : top ? "\u2580" : bottom ? "\u2584" : " ";
    }
    out += '\n';
  }
  QRcode_free(qr);
  return out;
}

ShareServer::ShareServer(ShareOptions options, std::string token)
    : o_(std::move(options)), token_(std::move(token)), manifest_(o_.paths) {}

ShareServer::~ShareServer() { stop(); }

std::string ShareServer::origin_of(const std::string& addr) const {
  const bool v6 = addr.find(':') != std::string::npos;
  return std::string(o_.cert.empty() ? "http" : "https") + "://" + (v6 ? "[" + addr + "]" : addr) + ":" +
         std::to_string(port_);
}

std::vector<std::string> ShareServer::advertised(const std::string& local_addr) const {
  std::vector<std::string> addrs = o_.addresses.empty() ? host_ipv4_addresses(loopback_v4(local_addr)) : o_.addresses;
  // The address the page came over first: it works for this browser.
  auto own = std::find(addrs.begin(), addrs.end(), local_addr);
  if (own != addrs.end()) std::rotate(addrs.begin(), own, own + 1);
  std::vector<std::string> out;
  for (const auto& a : addrs) out.push_back(origin_of(a));
  return out;
}

bool ShareServer::own_origin(const std::string& origin) const {
  if (origin.empty()) return false;
  std::vector<std::string> addrs = host_ipv4_addresses(true);
  addrs.insert(addrs.end(), o_.addresses.begin(), o_.addresses.end());
  return std::any_of(addrs.begin(), addrs.end(), [&](const std::string& a) { return origin_of(a) == origin; });
}

std::string ShareServer::link() const {
  std::vector<std::string> addrs = o_.addresses.empty() ? host_ipv4_addresses(false) : o_.addresses;
  if (addrs.empty()) addrs = {"127.0.0.1"};
  return origin_of(addrs.front()) + "/share/" + token_ + "/";
}

std::string ShareServer::start() {
  if (auto why = manifest_.refresh(); !why.empty()) return why;
  if (!o_.upload_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o_.upload_dir, ec);
    if (ec) return "cannot create the upload directory " + o_.upload_dir.string() + ": " + ec.message();
    uploads_ = std::make_unique<ShareUploads>(o_.upload_dir, ShareUploads::Limits{o_.upload_max, o_.disk_reserve});
  }
  const auto ep = lanes::parse_numeric_endpoint(o_.listen, 7880);
  if (!ep) return "bad share address '" + o_.listen + "'";
  if (o_.cert.empty() != o_.key.empty()) return "HTTPS needs both a certificate and its key";
  if (o_.cert.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    auto ssl = std::make_unique<httplib::SSLServer>(o_.cert.c_str(), o_.key.c_str());
    if (!ssl->is_valid()) return "cannot use the certificate " + o_.cert + " and key " + o_.key;
    server_ = std::move(ssl);
  }
  auto& s = *server_;
  // Every lane of every page holds a couple of requests at once.
  s.new_task_queue = [] { return new httplib::ThreadPool(16); };
  s.set_payload_max_length(kMaxRequestBody);
  s.set_keep_alive_max_count(1000);

  const std::string prefix = "/share/" + token_ + "/";
  s.set_pre_routing_handler([this, prefix](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    if (!same(std::string_view(req.path).substr(0, prefix.size()), prefix)) {
      res.status = 403;
      res.set_header("X-Braid-Error", "this share needs the link braid serve printed");
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string origin = req.get_header_value("Origin");
    if (own_origin(origin)) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
    }
    if (req.method == "OPTIONS") {  // a preflight: the upload's PUT, from another of our addresses
      if (own_origin(origin)) {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, PUT");
        res.set_header("Access-Control-Allow-Headers", "Content-Type");
        res.set_header("Access-Control-Max-Age", "600");
      }
      res.status = 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  s.Get(prefix, [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Security-Policy", "default-src 'self'; connect-src *; img-src 'self' blob:");
    res.set_content(kShareHtml, "text/html");
  });
  s.Get(prefix + "share.js", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kShareJs, "text/javascript");
  });
  s.Get(prefix + "api", [this](const httplib::Request& req, httplib::Response& res) {
    // Each page load sees the files as they are now: only a file whose size or mtime changed is hashed again.
    if (auto why = manifest_.refresh(); !why.empty()) return send_json(res, 500, {{"error", why}});
    nlohmann::json j = manifest_.json();
    j["addresses"] = advertised(req.local_addr);
    j["upload"] = uploads_ != nullptr;
    j["upload_max"] = o_.upload_max;
    send_json(res, 200, j);
  });
  s.Get(prefix + R"(f/(\d+)/chunk/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    std::string why;
    auto bytes = manifest_.chunk(std::stoull(req.matches[1].str()), std::stoull(req.matches[2].str()), why);
    if (!bytes) {
      res.status = why == "the file changed since it was shared" ? 409 : 404;
      res.set_content(why + "\n", "text/plain");
      return;
    }
    count(req.local_addr, false, bytes->size());
    res.set_content(std::move(*bytes), "application/octet-stream");
  });
  s.Get(prefix + "stats", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json served = nlohmann::json::object(), uploaded = nlohmann::json::object();
    for (const auto& [addr, c] : counters()) {
      served[addr] = {{"chunks", c.chunks_served}, {"bytes", c.bytes_served}};
      uploaded[addr] = {{"chunks", c.chunks_uploaded}, {"bytes", c.bytes_uploaded}};
    }
    send_json(res, 200, {{"served", served}, {"uploaded", uploaded}});
  });
  s.Post(prefix + "report", [](const httplib::Request& req, httplib::Response& res) {
    // The page's words go into the log: printable ASCII only, and short.
    auto clean = [&req](const char* key) {
      std::string v = req.get_param_value(key).substr(0, 100);
      for (char& c : v)
        if (c < 0x21 || c > 0x7e) c = '?';
      return v;
    };
    std::cerr << "braid serve: share: a page got a chunk that failed its SHA-256 (file " << clean("file")
              << ", chunk " << clean("chunk") << ") from " << clean("address") << " (page at " << req.remote_addr
              << ")" << std::endl;
    res.status = 204;
  });
  s.Post(prefix + "upload", [this](const httplib::Request& req, httplib::Response& res) {
    if (!uploads_) return send_json(res, 403, {{"error", "this share takes no uploads"}});
    const auto j = nlohmann::json::parse(req.body, nullptr, false);
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("size") ||
        !j["size"].is_number_unsigned() || !j.contains("chunks") || !j["chunks"].is_array())
      return send_json(res, 400, {{"error", "expected {name, size, chunks}"}});
    std::vector<Sha256> chunks;
    for (const auto& c : j["chunks"]) {
      auto h = c.is_string() ? sha256_from_hex(c.get<std::string>()) : std::nullopt;
      if (!h) return send_json(res, 400, {{"error", "a chunk hash is not 64 hex digits"}});
      chunks.push_back(*h);
    }
    const auto started = uploads_->start(j["name"], j["size"], chunks, free_bytes(o_.upload_dir));
    if (!started.error.empty()) return send_json(res, 409, {{"error", started.error}});
    std::cerr << "braid serve: share: upload " << started.id << " of '" << j["name"].get<std::string>() << "' ("
              << j["size"].get<uint64_t>() << " bytes) from " << req.remote_addr << std::endl;
    send_json(res, 200, {{"id", started.id}});
  });
  s.Put(prefix + R"(upload/(\d+)/chunk/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!uploads_) return send_json(res, 403, {{"error", "this share takes no uploads"}});
    std::string why;
    using R = ShareUploads::ChunkResult;
    const R r = uploads_->put(std::stoull(req.matches[1].str()), std::stoull(req.matches[2].str()), req.body, why);
    if (r == R::stored || r == R::complete) count(req.local_addr, true, req.body.size());
    switch (r) {
      case R::stored: return send_json(res, 200, {{"stored", true}});
      case R::complete: return send_json(res, 200, {{"complete", true}});
      case R::bad_hash: return send_json(res, 422, {{"error", why}});
      case R::bad_length: return send_json(res, 400, {{"error", why}});
      case R::unknown: return send_json(res, 404, {{"error", why}});
      case R::failed: return send_json(res, 500, {{"error", why}});
    }
  });

  if (ep->port() == 0) {
    port_ = s.bind_to_any_port(ep->host());
    if (port_ <= 0) return "cannot listen on " + o_.listen;
  } else {
    if (!s.bind_to_port(ep->host(), ep->port())) return "cannot listen on " + o_.listen + " (in use?)";
    port_ = ep->port();
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return {};
}

void ShareServer::count(const std::string& local_addr, bool upload, uint64_t bytes) {
  std::lock_guard l(counters_mu_);
  AddressCounters& c = counters_[local_addr];
  if (upload) {
    ++c.chunks_uploaded;
    c.bytes_uploaded += bytes;
  } else {
    ++c.chunks_served;
    c.bytes_served += bytes;
  }
}

std::map<std::string, ShareServer::AddressCounters> ShareServer::counters() const {
  std::lock_guard l(counters_mu_);
  return counters_;
}

void ShareServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace braid::serve
