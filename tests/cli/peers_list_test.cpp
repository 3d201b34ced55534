// `braid peers`' listing (cli/peers_command.hpp): pinned peers, then the
// peers visible now, each marked with its label when its key is pinned.
#include "cli/peers_command.hpp"

#include <gtest/gtest.h>
#include <openssl/rand.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>

namespace braid::cli {
namespace {

security::Fingerprint random_fp() {
  std::array<std::uint8_t, 32> b{};
  RAND_bytes(b.data(), 32);
  return security::Fingerprint(b);
}

struct TempDir {
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "braid-peers-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::filesystem::path path;
};

TEST(PrintPeers, ListsEveryPinnedPeerThenTheVisibleOnes) {
  TempDir tmp;
  auto known = security::KnownPeers::load_in(tmp.path);
  ASSERT_TRUE(known);
  const auto vm1 = random_fp(), vm2 = random_fp(), stranger = random_fp();
  ASSERT_TRUE(known.value().pin(vm1, "vm", "", "2026-12-02T04:31:07Z"));
  ASSERT_TRUE(known.value().pin(vm2, "vm", "", "2026-12-02T05:02:11Z"));

  std::ostringstream alone;
  print_peers(alone, known.value(), {});
  const std::string a = alone.str();
  EXPECT_NE(a.find("  vm     " + security::short_fingerprint(vm1) + "  2026-12-02 04:31 UTC  vm\n"), std::string::npos) << a;
  EXPECT_NE(a.find("  vm-2   " + security::short_fingerprint(vm2) + "  2026-12-02 05:02 UTC  vm\n"), std::string::npos) << a;
  EXPECT_EQ(a.find("Visible now"), std::string::npos) << a;

  std::ostringstream with;
  print_peers(with, known.value(),
              {VisiblePeer{"vm", "4821", "192.168.1.20:7878", vm2}, VisiblePeer{"kitchen", "", "[fe80::1]:7878", stranger},
               VisiblePeer{"nas", "0042", "10.0.0.9:7878", std::nullopt}});
  const std::string w = with.str();
  const auto visible = w.find("Visible now on the local network:\n");
  ASSERT_NE(visible, std::string::npos) << w;
  EXPECT_NE(w.find("192.168.1.20:7878", visible), std::string::npos) << w;
  EXPECT_NE(w.find("known as 'vm-2'", visible), std::string::npos) << w;  // by key, not by the name it announces
  EXPECT_NE(w.find("kitchen  no number    [fe80::1]:7878", visible), std::string::npos) << w;
  EXPECT_EQ(w.find("known as 'vm'\n", visible), std::string::npos) << w;
  EXPECT_NE(w.find("nas      number 0042", visible), std::string::npos) << w;
}

TEST(PrintPeers, SaysHowToPairWhenThereIsNobody) {
  TempDir tmp;
  auto known = security::KnownPeers::load_in(tmp.path);
  ASSERT_TRUE(known);
  std::ostringstream out;
  print_peers(out, known.value(), {});
  EXPECT_NE(out.str().find("No known peers yet"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("pairing code"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace braid::cli
