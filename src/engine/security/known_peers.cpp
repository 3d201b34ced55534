#include "known_peers.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "files.h"
#include "peer_name.h"
#include "unique_fd.h"

namespace braid::security {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kHeader =
    "# braid known peers: one line per peer, \"NAME FINGERPRINT\".\n"
    "# Delete a peer's line to forget it; it must then pair again with a code.\n";

Result<std::vector<KnownPeers::Entry>> parse(std::string_view text, const fs::path& file) {
  std::vector<KnownPeers::Entry> out;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);

    std::vector<std::string_view> tokens;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      std::size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      if (i > start) tokens.push_back(line.substr(start, i - start));
    }
    if (tokens.empty()) continue;
    auto bad = [&](std::string_view why) {
      return make_error(Errc::bad_file_format,
                        file.string() + ":" + std::to_string(line_no) + ": " + std::string(why) +
                            " (expected \"NAME SHA256:...\"); fix or delete that line");
    };
    if (tokens.size() != 2) return bad("wrong number of fields");
    if (!is_valid_peer_name(tokens[0])) return bad("invalid peer name");
    auto fp = Fingerprint::parse(tokens[1]);
    if (!fp) return bad("invalid fingerprint");
    out.push_back({std::string(tokens[0]), fp.value(), line_no});
  }
  return out;
}

Result<std::string> read_fd(int fd, const fs::path& file) {
  std::string data;
  char buf[4096];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(Errc::io_error, "cannot read '" + file.string() + "': " + errno_text(errno));
    if (n == 0) return data;
    data.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
}

}  // namespace

Result<KnownPeers> KnownPeers::load(const fs::path& file) {
  KnownPeers kp;
  kp.file_ = file;
  auto text = read_small_file(file, false);
  if (!text) return text.error();
  if (text.value()) {
    auto entries = parse(*text.value(), file);
    if (!entries) return entries.error();
    kp.entries_ = std::move(entries.value());
  }
  return kp;
}

KnownPeers::Check KnownPeers::check(std::string_view name, const Fingerprint& fp) const {
  for (const Entry& e : entries_)
    if (e.fingerprint == fp) return {Verdict::pinned, e};
  for (const Entry& e : entries_)
    if (e.name == name) return {Verdict::changed, e};
  return {Verdict::unknown, std::nullopt};
}

Status KnownPeers::add(std::string_view name, const Fingerprint& fp) {
  if (!is_valid_peer_name(name))
    return make_error(Errc::invalid_argument, in_quotes(std::string(name)) + " is not a valid braid peer name");
  UniqueFd fd(::open(file_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return make_error(Errc::io_error, "cannot open '" + file_.string() + "': " + errno_text(errno));
  while (::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) return make_error(Errc::io_error, "cannot lock '" + file_.string() + "': " + errno_text(errno));

  // Re-read under the lock: another braid may have added entries since load().
  auto text = read_fd(fd.get(), file_);
  if (!text) return text.error();
  auto entries = parse(text.value(), file_);
  if (!entries) return entries.error();
  entries_ = std::move(entries.value());

  for (const Entry& e : entries_) {
    if (e.name == name && e.fingerprint == fp) return {};
    if (e.name == name) return make_error(Errc::peer_key_changed, key_changed_message(e, fp, file_));
  }
  std::string line;
  if (text.value().empty()) line += kHeader;
  else if (text.value().back() != '\n') line += '\n';
  line += std::string(name) + " " + fp.to_string() + "\n";
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(Errc::io_error, "cannot write '" + file_.string() + "': " + errno_text(errno));
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return make_error(Errc::io_error, "cannot fsync '" + file_.string() + "': " + errno_text(errno));

  int line_no = 1;
  for (char c : text.value() + line) line_no += c == '\n';
  entries_.push_back({std::string(name), fp, line_no - 1});
  return {};
}

std::string key_changed_message(const KnownPeers::Entry& pinned, const Fingerprint& offered, const fs::path& file) {
  std::string line = std::to_string(pinned.line);
  return "@@@ WARNING: THE IDENTITY OF PEER '" + pinned.name + "' HAS CHANGED @@@\n"
         "braid refuses this connection. Someone may be impersonating '" + pinned.name +
         "' (a man-in-the-middle attack), or '" + pinned.name + "' has created a new identity.\n"
         "  pinned key (" + file.string() + " line " + line + "): " + pinned.fingerprint.to_string() + "\n"
         "  key offered now:   " + offered.to_string() + "\n"
         "A pairing code does not override a pinned key. If you know why the key changed, delete line " + line +
         " ('" + pinned.name + " ...') from " + file.string() + " and pair again with a code.";
}

}  // namespace braid::security
