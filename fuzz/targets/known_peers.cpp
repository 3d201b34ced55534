// The known-peers file (security::KnownPeers), read at every session start:
// a text file the user edits by hand. Input: the file's bytes. Properties:
//   - it loads, or fails with bad_file_format naming the file and a line;
//   - every entry has a valid label and a fingerprint whose printed form
//     parses back to it; labels are unique; line numbers rise and point
//     into the file;
//   - check() finds each entry's key pinned, check_label() each label;
//   - round trip: the entries written out one per line load back the same;
//   - pin() never writes a file that load() then refuses: a new key pinned
//     in a loadable file loads back with everything that was there, under a
//     label no other key has; a key already pinned keeps its entry;
//   - an entry's label addressing another key is "changed".
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/security/known_peers.h"
#include "engine/security/peer_name.h"
#include "fuzz_support.hpp"

using namespace braid::security;

namespace {

void write(const std::filesystem::path& p, std::string_view text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

Fingerprint fingerprint_of(uint8_t fill) {
  std::array<uint8_t, Fingerprint::kSize> b{};
  b.fill(fill);
  return Fingerprint(b);
}

bool same_pins(const std::vector<KnownPeers::Entry>& a, const std::vector<KnownPeers::Entry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].label != b[i].label || !(a[i].fingerprint == b[i].fingerprint) || a[i].paired != b[i].paired ||
        a[i].host != b[i].host)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto file = braid::fuzz::scratch_dir() / "known_peers";
  write(file, text);

  auto kp = KnownPeers::load(file);
  if (!kp) {
    FUZZ_CHECK(kp.error().code == Errc::bad_file_format);
    FUZZ_CHECK(kp.error().message.find(file.string() + ":") == 0);
    return 0;
  }
  const auto entries = kp.value().entries();
  const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  int last_line = 0;
  for (const auto& e : entries) {
    FUZZ_CHECK(is_valid_peer_name(e.label));
    const KnownPeers::Entry* by_label = kp.value().find_label(e.label);
    FUZZ_CHECK(by_label != nullptr && by_label->line == e.line);  // labels are unique
    auto fp = Fingerprint::parse(e.fingerprint.to_string());
    FUZZ_CHECK(fp.ok() && fp.value() == e.fingerprint);
    FUZZ_CHECK(e.line > last_line && e.line <= lines);
    last_line = e.line;
    FUZZ_CHECK(kp.value().check(e.fingerprint).verdict == KnownPeers::Verdict::pinned);
    FUZZ_CHECK(kp.value().check_label(e.label, e.fingerprint).verdict == KnownPeers::Verdict::pinned);
  }

  // Round trip through the canonical form.
  std::string canonical;
  for (const auto& e : entries) {
    canonical += e.label + " " + e.fingerprint.to_string();
    if (!e.paired.empty()) canonical += " paired=" + e.paired;
    if (!e.host.empty()) canonical += " host=" + e.host;
    canonical += "\n";
  }
  const auto file2 = braid::fuzz::scratch_dir() / "known_peers.canonical";
  write(file2, canonical);
  auto back = KnownPeers::load(file2);
  FUZZ_CHECK(back.ok() && same_pins(back.value().entries(), entries));

  // A new pin, added to the fuzzed file itself, claiming a name that may be taken.
  const std::string host = entries.empty() ? "fuzz-new-peer" : entries.front().label;
  const Fingerprint fp = fingerprint_of(0x42);
  const auto had = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.fingerprint == fp; });
  const auto pinned = kp.value().pin(fp, host, "", "2026-12-02T04:31:07Z");
  FUZZ_CHECK(pinned.ok());
  auto reread = KnownPeers::load(file);
  FUZZ_CHECK(reread.ok());
  const auto& now = reread.value().entries();
  if (had != entries.end()) {
    FUZZ_CHECK(pinned.value().label == had->label);
    FUZZ_CHECK(now.size() == entries.size());
  } else {
    FUZZ_CHECK(now.size() == entries.size() + 1);
    FUZZ_CHECK(std::equal(entries.begin(), entries.end(), now.begin(), [](const auto& a, const auto& b) {
      return a.label == b.label && a.fingerprint == b.fingerprint && a.line == b.line;
    }));
    FUZZ_CHECK(now.back().line == pinned.value().line);
    FUZZ_CHECK(now.back().label == pinned.value().label);
    for (size_t i = 0; i + 1 < now.size(); ++i) FUZZ_CHECK(now[i].label != pinned.value().label);
  }
  FUZZ_CHECK(reread.value().check(fp).verdict == KnownPeers::Verdict::pinned);

  // An entry's label presented with another key is "changed".
  if (!entries.empty()) {
    const Fingerprint other = fingerprint_of(static_cast<uint8_t>(entries.front().fingerprint.bytes()[0] ^ 0xff));
    if (!(other == entries.front().fingerprint))
      FUZZ_CHECK(kp.value().check_label(entries.front().label, other).verdict == KnownPeers::Verdict::changed);
  }
  return 0;
}
