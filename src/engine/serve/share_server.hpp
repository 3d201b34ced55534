// `braid serve --share`: a second HTTP(S) server, apart from the dashboard,
// for devices without braid — a phone, a borrowed laptop. It listens on
// every address of the host (0.0.0.0 by default: the point is the LAN), and
// nothing is served without the share token, which is part of every path:
// /share/TOKEN/…. The token is new at every start and printed once, in the
// link and its QR code.
//
//   GET  /share/TOKEN/                  the page (download and upload), share.js beside it
//   GET  /share/TOKEN/api               {chunk_size, files: [{id, name, size, chunks: [sha256…]}],
//                                        addresses: ["http://ADDR:PORT"…], upload: bool, upload_max}
//   GET  /share/TOKEN/f/ID/chunk/N      chunk N of file ID (1 MiB, the last shorter)
//   POST /share/TOKEN/report?address=A&file=ID&chunk=N   the page says A sent a chunk that failed its hash
//   POST /share/TOKEN/upload            {name, size, chunks: [sha256…]} → {id}
//   PUT  /share/TOKEN/upload/ID/chunk/N the chunk's bytes → {stored|complete}; 422 if its hash is wrong
//   GET  /share/TOKEN/stats             bytes and chunks served and taken per local address of the
//                                        server ({"served": {ADDR: {chunks, bytes}}, "uploaded": {…}}):
//                                        whether every address really carried a share
//
// A request without the token gets 403 and an empty body: nothing about the
// share (not even that one exists) reaches whoever lacks the link; the
// reason is in the header X-Braid-Error for a person debugging with curl.
//
// The page fetches chunks from every address at once, so a page loaded from
// one address reads from the others cross-origin: responses carry
// Access-Control-Allow-Origin for an Origin that is one of the server's own
// (http[s]://ADDR:PORT for an address of this host or a configured one),
// and only behind the token.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/serve/share_files.hpp"

namespace httplib {
class Server;
}

namespace braid::serve {

struct ShareOptions {
  std::vector<std::filesystem::path> paths;  // what --share serves (may be empty: upload only)
  std::string listen = "0.0.0.0:7880";        // ADDR:PORT; port 0 picks one
  std::vector<std::string> addresses;         // advertised to the page; empty: the host's IPv4 addresses
  std::filesystem::path upload_dir;           // empty: no upload
  uint64_t upload_max = 0;                    // bytes; 0: no bound
  uint64_t disk_reserve = 0;
  std::string cert, key;                      // both set: HTTPS (PEM files)
};

/// The host's IPv4 addresses (getifaddrs), loopback ones included when `loopback`.
std::vector<std::string> host_ipv4_addresses(bool loopback);

/// The share link's QR code for a terminal: two rows of modules per line as
/// UTF-8 half blocks, light modules drawn (for a dark terminal), with a
/// quiet zone. "" if it cannot be made.
std::string qr_terminal(const std::string& text);

class ShareServer {
 public:
  ShareServer(ShareOptions options, std::string token);
  ~ShareServer();
  /// Hashes the files, binds, serves on a thread. Empty, or why not.
  std::string start();
  void stop();
  /// "http://ADDR:PORT/share/TOKEN/" for the first advertised address.
  std::string link() const;
  int port() const { return port_; }

  /// Per local address of the server (the address a request came in on).
  struct AddressCounters {
    uint64_t chunks_served = 0, bytes_served = 0;      // chunk GETs answered 200
    uint64_t chunks_uploaded = 0, bytes_uploaded = 0;  // upload chunk PUTs stored (hash checked)
  };
  std::map<std::string, AddressCounters> counters() const;

 private:
  void count(const std::string& local_addr, bool upload, uint64_t bytes);

  std::vector<std::string> advertised(const std::string& local_addr) const;
  bool own_origin(const std::string& origin) const;
  std::string origin_of(const std::string& addr) const;

  ShareOptions o_;
  std::string token_;
  ShareManifest manifest_;
  std::unique_ptr<ShareUploads> uploads_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex counters_mu_;
  std::map<std::string, AddressCounters> counters_;
};

}  // namespace braid::serve
