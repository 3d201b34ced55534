// The known-peers file (security::KnownPeers), read at every session start:
// a text file the user edits by hand. Input: the file's bytes. Properties:
//   - it loads, or fails with bad_file_format naming the file and a line;
//   - every entry has a valid peer name and a fingerprint whose printed form
//     parses back to it; line numbers rise and point into the file;
//   - check() finds each entry's key pinned;
//   - round trip: the entries written out one per line load back the same;
//   - add() never writes a file that load() then refuses: a new pin added to
//     a loadable file loads back with everything that was there, and a name
//     pinned to another key is refused as peer_key_changed.
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
    if (a[i].name != b[i].name || !(a[i].fingerprint == b[i].fingerprint)) return false;
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
    FUZZ_CHECK(is_valid_peer_name(e.name));
    auto fp = Fingerprint::parse(e.fingerprint.to_string());
    FUZZ_CHECK(fp.ok() && fp.value() == e.fingerprint);
    FUZZ_CHECK(e.line > last_line && e.line <= lines);
    last_line = e.line;
    FUZZ_CHECK(kp.value().check(e.name, e.fingerprint).verdict == KnownPeers::Verdict::pinned);
  }

  // Round trip through the canonical form.
  std::string canonical;
  for (const auto& e : entries) canonical += e.name + " " + e.fingerprint.to_string() + "\n";
  const auto file2 = braid::fuzz::scratch_dir() / "known_peers.canonical";
  write(file2, canonical);
  auto back = KnownPeers::load(file2);
  FUZZ_CHECK(back.ok() && same_pins(back.value().entries(), entries));

  // A new pin, added to the fuzzed file itself.
  const std::string name = "fuzz-new-peer";
  const Fingerprint fp = fingerprint_of(0x42);
  // add() decides by the first entry of that name: the same key is a no-op,
  // another key a refusal.
  const auto first = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.name == name; });
  const Status added = kp.value().add(name, fp);
  if (first != entries.end() && !(first->fingerprint == fp)) {
    FUZZ_CHECK(!added.ok() && added.error().code == Errc::peer_key_changed);
  } else {
    FUZZ_CHECK(added.ok());
    const bool had = first != entries.end();
    auto reread = KnownPeers::load(file);
    FUZZ_CHECK(reread.ok());
    const auto& now = reread.value().entries();
    FUZZ_CHECK(now.size() == entries.size() + (had ? 0 : 1));
    FUZZ_CHECK(std::equal(entries.begin(), entries.end(), now.begin(), [](const auto& a, const auto& b) {
      return a.name == b.name && a.fingerprint == b.fingerprint && a.line == b.line;
    }));
    FUZZ_CHECK(reread.value().check(name, fp).verdict == KnownPeers::Verdict::pinned);
    if (!had) FUZZ_CHECK(now.back().line == kp.value().entries().back().line);
  }

  // The first entry's name with another key is refused.
  if (!entries.empty()) {
    const Fingerprint other = fingerprint_of(static_cast<uint8_t>(entries.front().fingerprint.bytes()[0] ^ 0xff));
    const Status s = kp.value().add(entries.front().name, other);
    FUZZ_CHECK(!s.ok() && s.error().code == Errc::peer_key_changed);
  }
  return 0;
}
