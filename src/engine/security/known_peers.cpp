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
    "# braid known peers: one line per peer, \"LABEL FINGERPRINT [paired=WHEN] [host=NAME]\".\n"
    "# The key is the identity; the label is yours (braid peers rename OLD NEW).\n"
    "# `braid peers forget LABEL` (or deleting the line) forgets a peer: it must then pair again with a code.\n";
constexpr std::size_t kMinFingerprintPrefix = 4;

bool is_timestamp(std::string_view v) {
  if (v.empty() || v.size() > 32) return false;
  for (char c : v)
    if (!((c >= '0' && c <= '9') || c == '-' || c == ':' || c == 'T' || c == 'Z')) return false;
  return true;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    lines.push_back(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
  }
  return lines;
}

std::string format_entry(const KnownPeers::Entry& e) {
  std::string line = e.label + " " + e.fingerprint.to_string();
  if (!e.paired.empty()) line += " paired=" + e.paired;
  if (!e.host.empty()) line += " host=" + e.host;
  return line;
}

Result<std::vector<KnownPeers::Entry>> parse(std::string_view text, const fs::path& file) {
  std::vector<KnownPeers::Entry> out;
  int line_no = 0;
  for (std::string_view line : split_lines(text)) {
    ++line_no;
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
                            " (expected \"LABEL SHA256:... [paired=WHEN] [host=NAME]\"); fix or delete that line");
    };
    if (tokens.size() < 2) return bad("wrong number of fields");
    if (!is_valid_peer_name(tokens[0])) return bad("invalid label");
    auto fp = Fingerprint::parse(tokens[1]);
    if (!fp) return bad("invalid fingerprint");
    KnownPeers::Entry e{std::string(tokens[0]), fp.value(), {}, {}, line_no};
    for (std::size_t t = 2; t < tokens.size(); ++t) {
      const std::string_view field = tokens[t];
      if (field.starts_with("paired=") && e.paired.empty() && is_timestamp(field.substr(7))) {
        e.paired = std::string(field.substr(7));
      } else if (field.starts_with("host=") && e.host.empty() && is_valid_peer_name(field.substr(5))) {
        e.host = std::string(field.substr(5));
      } else {
        return bad("unknown or repeated field '" + std::string(field.substr(0, 40)) + "'");
      }
    }
    for (const auto& other : out)
      if (other.label == e.label)
        return bad("the label '" + e.label + "' is already used on line " + std::to_string(other.line));
    out.push_back(std::move(e));
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

// The file opened and exclusively locked. A rewrite renames a new file over
// the path, so after the lock is granted the fd must still be the file the
// path names; if not, the lock is on a replaced file and we try again.
Result<UniqueFd> open_locked(const fs::path& file) {
  for (;;) {
    UniqueFd fd(::open(file.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return make_error(Errc::io_error, "cannot open '" + file.string() + "': " + errno_text(errno));
    while (::flock(fd.get(), LOCK_EX) != 0)
      if (errno != EINTR) return make_error(Errc::io_error, "cannot lock '" + file.string() + "': " + errno_text(errno));
    struct stat held {}, named {};
    if (::fstat(fd.get(), &held) != 0)
      return make_error(Errc::io_error, "cannot stat '" + file.string() + "': " + errno_text(errno));
    if (::lstat(file.c_str(), &named) == 0 && named.st_ino == held.st_ino && named.st_dev == held.st_dev) return fd;
  }
}

// Under the file's lock: its text now, with `entries` replaced by what it
// holds (another braid may have changed it since load()).
Result<std::string> reread(int fd, const fs::path& file, std::vector<KnownPeers::Entry>& entries) {
  auto text = read_fd(fd, file);
  if (!text) return text.error();
  auto parsed = parse(text.value(), file);
  if (!parsed) return parsed.error();
  entries = std::move(parsed.value());
  return text;
}

Error not_a_label(std::string_view label) {
  return Error{Errc::invalid_argument, in_quotes(label) + " is not a valid label (1 to 64 of A-Z a-z 0-9 . _ @ : + -)"};
}

Status append(int fd, const std::string& text, const fs::path& file) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(Errc::io_error, "cannot write '" + file.string() + "': " + errno_text(errno));
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return make_error(Errc::io_error, "cannot fsync '" + file.string() + "': " + errno_text(errno));
  return {};
}

// `label` if no other key has it, else label-2, label-3, ... (cut to fit).
std::string unique_label(const std::vector<KnownPeers::Entry>& entries, std::string_view label) {
  auto taken = [&](std::string_view l) {
    for (const auto& e : entries)
      if (e.label == l) return true;
    return false;
  };
  if (!taken(label)) return std::string(label);
  for (int n = 2;; ++n) {
    std::string suffix(1, '-');  // appended, not "-" + …: g++ 12 warns falsely (-Wrestrict)
    suffix += std::to_string(n);
    std::string candidate = std::string(label.substr(0, kMaxPeerNameLength - suffix.size())) + suffix;
    if (!taken(candidate)) return candidate;
  }
}

Result<KnownPeers::Entry> find_in(const std::vector<KnownPeers::Entry>& entries, std::string_view which,
                                  const fs::path& file) {
  for (const auto& e : entries)
    if (e.label == which) return e;
  std::string_view prefix = which;
  if (prefix.starts_with(Fingerprint::kPrefix)) prefix.remove_prefix(Fingerprint::kPrefix.size());
  const KnownPeers::Entry* found = nullptr;
  int matches = 0;
  if (prefix.size() >= kMinFingerprintPrefix)
    for (const auto& e : entries)
      if (e.fingerprint.to_string().substr(Fingerprint::kPrefix.size()).starts_with(prefix)) {
        found = &e;
        ++matches;
      }
  if (matches == 1) return *found;
  if (matches > 1)
    return make_error(Errc::no_such_peer, in_quotes(which) + " starts the fingerprints of " + std::to_string(matches) +
                                              " known peers; give more of it, or a label");
  return make_error(Errc::no_such_peer, "no known peer is labelled " + in_quotes(which) +
                                            " or has a fingerprint starting with it (" + file.string() + ")");
}

// Rewrites the locked file with `edit` applied to its lines (index = line - 1).
template <typename Edit>
Status rewrite(const fs::path& file, std::string_view text, Edit edit) {
  std::vector<std::string> lines;
  for (std::string_view l : split_lines(text)) lines.emplace_back(l);
  edit(lines);
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return replace_file(file, out, 0600);
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

const KnownPeers::Entry* KnownPeers::find_key(const Fingerprint& fp) const {
  for (const Entry& e : entries_)
    if (e.fingerprint == fp) return &e;
  return nullptr;
}

const KnownPeers::Entry* KnownPeers::find_label(std::string_view label) const {
  for (const Entry& e : entries_)
    if (e.label == label) return &e;
  return nullptr;
}

Result<KnownPeers::Entry> KnownPeers::find(std::string_view which) const { return find_in(entries_, which, file_); }

KnownPeers::Check KnownPeers::check(const Fingerprint& fp) const {
  if (const Entry* e = find_key(fp)) return {Verdict::pinned, *e};
  return {Verdict::unknown, std::nullopt};
}

KnownPeers::Check KnownPeers::check_label(std::string_view label, const Fingerprint& fp) const {
  const Entry* e = find_label(label);
  if (e == nullptr) return {Verdict::unknown, std::nullopt};
  if (e->fingerprint == fp) return {Verdict::pinned, *e};
  return {Verdict::changed, *e};
}

Result<KnownPeers::Entry> KnownPeers::pin(const Fingerprint& fp, std::string_view host, std::string_view wanted,
                                          std::string_view paired_at) {
  const std::string_view base = wanted.empty() ? host : wanted;
  if (!is_valid_peer_name(base))
    return not_a_label(base);
  auto fd = open_locked(file_);
  if (!fd) return fd.error();
  auto text = reread(fd.value().get(), file_, entries_);
  if (!text) return text.error();

  if (const Entry* e = find_key(fp)) return *e;
  Entry e{unique_label(entries_, base), fp, std::string(paired_at), is_valid_peer_name(host) ? std::string(host) : "", 0};
  if (!e.paired.empty() && !is_timestamp(e.paired)) e.paired.clear();
  std::string line;
  if (text.value().empty()) line += kHeader;
  else if (text.value().back() != '\n') line += '\n';
  line += format_entry(e) + "\n";
  if (Status st = append(fd.value().get(), line, file_); !st) return st.error();
  int line_no = 1;
  for (char c : text.value() + line) line_no += c == '\n';
  e.line = line_no - 1;
  entries_.push_back(e);
  return e;
}

Result<KnownPeers::Entry> KnownPeers::relabel(std::string_view which, std::string_view to) {
  if (!is_valid_peer_name(to))
    return not_a_label(to);
  auto fd = open_locked(file_);
  if (!fd) return fd.error();
  auto text = reread(fd.value().get(), file_, entries_);
  if (!text) return text.error();
  auto found = find_in(entries_, which, file_);
  if (!found) return found.error();
  Entry e = found.value();
  if (e.label == to) return e;
  if (const Entry* other = find_label(to))
    return make_error(Errc::label_taken, "the label " + in_quotes(to) + " already names another peer (" +
                                             other->fingerprint.to_string() + "); rename or forget that one first");
  e.label = std::string(to);
  Status st = rewrite(file_, text.value(), [&](std::vector<std::string>& lines) {
    std::string& line = lines[static_cast<std::size_t>(e.line - 1)];
    const std::size_t hash = line.find('#');
    line = format_entry(e) + (hash == std::string::npos ? "" : "  " + line.substr(hash));
  });
  if (!st) return st.error();
  for (Entry& x : entries_)
    if (x.line == e.line) x = e;
  return e;
}

Result<KnownPeers::Entry> KnownPeers::forget(std::string_view which) {
  auto fd = open_locked(file_);
  if (!fd) return fd.error();
  auto text = reread(fd.value().get(), file_, entries_);
  if (!text) return text.error();
  auto found = find_in(entries_, which, file_);
  if (!found) return found.error();
  const Entry e = found.value();
  Status st = rewrite(file_, text.value(), [&](std::vector<std::string>& lines) {
    lines.erase(lines.begin() + (e.line - 1));
  });
  if (!st) return st.error();
  std::vector<Entry> kept;
  for (Entry& x : entries_) {
    if (x.line == e.line) continue;
    if (x.line > e.line) --x.line;
    kept.push_back(std::move(x));
  }
  entries_ = std::move(kept);
  return e;
}

std::string key_changed_message(const KnownPeers::Entry& pinned, const Fingerprint& offered, const fs::path& file) {
  std::string line = std::to_string(pinned.line);
  return "@@@ WARNING: THE IDENTITY OF PEER '" + pinned.label + "' HAS CHANGED @@@\n"
         "braid refuses this connection. Someone may be impersonating '" + pinned.label +
         "' (a man-in-the-middle attack), or '" + pinned.label + "' has created a new identity.\n"
         "  pinned key (" + file.string() + " line " + line + "): " + pinned.fingerprint.to_string() + "\n"
         "  key offered now:   " + offered.to_string() + "\n"
         "A pairing code does not override a pinned key. If you know why the key changed, run `braid peers forget " +
         pinned.label + "` (or delete line " + line + " of " + file.string() + ") and pair again with a code.";
}

std::string short_fingerprint(const Fingerprint& fp) {
  constexpr std::size_t kShown = 16;  // base64 characters: 96 bits, plenty to tell peers apart
  return fp.to_string().substr(0, Fingerprint::kPrefix.size() + kShown);
}

}  // namespace braid::security
