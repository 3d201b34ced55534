#include "engine/security/known_peers.h"

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "test_support.h"

namespace braid::security {
namespace {

using testing::TempDir;

Fingerprint random_fp() {
  std::array<std::uint8_t, 32> b{};
  RAND_bytes(b.data(), 32);
  return Fingerprint(b);
}

constexpr std::string_view kWhen = "2026-12-02T04:31:07Z";

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(KnownPeers, MissingFileIsEmpty) {
  TempDir tmp;
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp);
  EXPECT_TRUE(kp.value().entries().empty());
  EXPECT_EQ(kp.value().check(random_fp()).verdict, KnownPeers::Verdict::unknown);
}

TEST(KnownPeers, PinThenLookUpAndPersist) {
  TempDir tmp;
  Fingerprint bob = random_fp(), carol = random_fp();
  {
    auto kp = KnownPeers::load_in(tmp.path());
    ASSERT_TRUE(kp);
    ASSERT_TRUE(kp.value().pin(bob, "bob", "", kWhen));
    ASSERT_TRUE(kp.value().pin(carol, "carol", "", kWhen));
    auto again = kp.value().pin(bob, "bob-renamed", "", kWhen);  // a pinned key keeps its entry
    ASSERT_TRUE(again);
    EXPECT_EQ(again.value().label, "bob");
    EXPECT_EQ(kp.value().check(bob).verdict, KnownPeers::Verdict::pinned);
  }
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp) << kp.error().message;
  ASSERT_EQ(kp.value().entries().size(), 2u);
  auto c = kp.value().check(carol);
  EXPECT_EQ(c.verdict, KnownPeers::Verdict::pinned);
  ASSERT_TRUE(c.entry);
  EXPECT_EQ(c.entry->label, "carol");
  EXPECT_EQ(c.entry->host, "carol");
  EXPECT_EQ(c.entry->paired, kWhen);
  EXPECT_EQ(kp.value().check(random_fp()).verdict, KnownPeers::Verdict::unknown);
}

TEST(KnownPeers, TheKeyNotTheNameIsTheIdentity) {
  TempDir tmp;
  Fingerprint bob = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp && kp.value().pin(bob, "bob", "", kWhen));
  auto c = kp.value().check(bob);
  EXPECT_EQ(c.verdict, KnownPeers::Verdict::pinned);
  EXPECT_EQ(c.entry->label, "bob");
}

TEST(KnownPeers, TwoKeysClaimingOneNameAreTwoPeersWithDistinctLabels) {
  TempDir tmp;
  Fingerprint vm1 = random_fp(), vm2 = random_fp(), vm3 = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp);
  auto a = kp.value().pin(vm1, "vm", "", kWhen);
  auto b = kp.value().pin(vm2, "vm", "", kWhen);
  auto c = kp.value().pin(vm3, "vm", "", kWhen);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a.value().label, "vm");
  EXPECT_EQ(b.value().label, "vm-2");
  EXPECT_EQ(c.value().label, "vm-3");
  auto reloaded = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  EXPECT_EQ(reloaded.value().check(vm2).entry->label, "vm-2");
  EXPECT_EQ(reloaded.value().check(vm2).entry->host, "vm");
  // A wanted label is used as given, and made unique the same way.
  auto d = kp.value().pin(random_fp(), "vm", "nas", kWhen);
  auto e = kp.value().pin(random_fp(), "vm", "nas", kWhen);
  ASSERT_TRUE(d && e);
  EXPECT_EQ(d.value().label, "nas");
  EXPECT_EQ(e.value().label, "nas-2");
}

TEST(KnownPeers, ALabelAddressingAnotherKeyIsChangedWithALoudMessage) {
  TempDir tmp;
  Fingerprint old_fp = random_fp(), new_fp = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp);
  ASSERT_TRUE(kp.value().pin(random_fp(), "carol", "", kWhen));
  ASSERT_TRUE(kp.value().pin(old_fp, "bob", "", kWhen));
  EXPECT_EQ(kp.value().check_label("bob", old_fp).verdict, KnownPeers::Verdict::pinned);
  EXPECT_EQ(kp.value().check_label("nobody", new_fp).verdict, KnownPeers::Verdict::unknown);
  auto c = kp.value().check_label("bob", new_fp);
  ASSERT_EQ(c.verdict, KnownPeers::Verdict::changed);
  ASSERT_TRUE(c.entry);
  EXPECT_EQ(c.entry->fingerprint, old_fp);
  std::string msg = key_changed_message(*c.entry, new_fp, kp.value().file());
  EXPECT_NE(msg.find("'bob'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(old_fp.to_string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(new_fp.to_string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(kp.value().file().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("line " + std::to_string(c.entry->line)), std::string::npos) << msg;
  EXPECT_NE(msg.find("braid peers forget bob"), std::string::npos) << msg;
  EXPECT_NE(msg.find("WARNING"), std::string::npos);
  // By key alone, the new key is just unknown.
  EXPECT_EQ(kp.value().check(new_fp).verdict, KnownPeers::Verdict::unknown);
}

TEST(KnownPeers, OldTwoFieldLinesStayValidAndNewLinesAreReadable) {
  TempDir tmp;
  Fingerprint old1 = random_fp(), old2 = random_fp(), fresh = random_fp();
  std::ofstream(tmp.path() / "known_peers") << "# braid known peers: one line per peer, \"NAME FINGERPRINT\".\n"
                                            << "laptop " << old1.to_string() << "\n"
                                            << "vm " << old2.to_string() << "  # the old vm\n";
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp) << kp.error().message;
  ASSERT_EQ(kp.value().entries().size(), 2u);
  EXPECT_EQ(kp.value().check(old2).entry->label, "vm");
  EXPECT_TRUE(kp.value().check(old2).entry->paired.empty());
  auto pinned = kp.value().pin(fresh, "vm", "", kWhen);
  ASSERT_TRUE(pinned);
  EXPECT_EQ(pinned.value().label, "vm-2");
  const std::string text = file_text(tmp.path() / "known_peers");
  EXPECT_NE(text.find("laptop " + old1.to_string() + "\n"), std::string::npos) << text;  // untouched
  EXPECT_NE(text.find("vm-2 " + fresh.to_string() + " paired=" + std::string(kWhen) + " host=vm\n"), std::string::npos)
      << text;
}

TEST(KnownPeers, RenameByLabelOrKeyPrefixKeepsTheRestOfTheFile) {
  TempDir tmp;
  Fingerprint vm1 = random_fp(), vm2 = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp && kp.value().pin(vm1, "vm", "", kWhen) && kp.value().pin(vm2, "vm", "", kWhen));
  auto r = kp.value().relabel("vm-2", "build-box");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value().label, "build-box");
  EXPECT_EQ(r.value().fingerprint, vm2);
  // By the start of the key, as `braid peers` shows it.
  auto by_key = kp.value().relabel(short_fingerprint(vm1), "old-vm");
  ASSERT_TRUE(by_key) << by_key.error().message;
  EXPECT_EQ(by_key.value().fingerprint, vm1);
  auto reloaded = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  EXPECT_EQ(reloaded.value().check(vm1).entry->label, "old-vm");
  EXPECT_EQ(reloaded.value().check(vm2).entry->label, "build-box");
  EXPECT_EQ(reloaded.value().check(vm2).entry->host, "vm");
  EXPECT_EQ(reloaded.value().check(vm2).entry->paired, kWhen);
  EXPECT_EQ(reloaded.value().find_label("vm"), nullptr);
  EXPECT_EQ(file_text(tmp.path() / "known_peers").rfind("# braid known peers", 0), 0u);  // header kept

  auto taken = kp.value().relabel("old-vm", "build-box");
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code, Errc::label_taken);
  auto missing = kp.value().relabel("nothing-here", "x");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::no_such_peer);
  EXPECT_FALSE(kp.value().relabel("old-vm", "two words"));
}

TEST(KnownPeers, ForgetRemovesOnlyThatPeer) {
  TempDir tmp;
  Fingerprint a = random_fp(), b = random_fp(), c = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp && kp.value().pin(a, "a", "", kWhen) && kp.value().pin(b, "b", "", kWhen) &&
              kp.value().pin(c, "c", "", kWhen));
  auto gone = kp.value().forget("b");
  ASSERT_TRUE(gone) << gone.error().message;
  EXPECT_EQ(gone.value().fingerprint, b);
  auto reloaded = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(reloaded);
  EXPECT_EQ(reloaded.value().entries().size(), 2u);
  EXPECT_EQ(reloaded.value().check(b).verdict, KnownPeers::Verdict::unknown);
  // Line numbers still point at the entries, in memory and on disk.
  EXPECT_EQ(reloaded.value().check(c).entry->line, kp.value().check(c).entry->line);
  EXPECT_FALSE(kp.value().forget("b"));
}

TEST(KnownPeers, AKeyPrefixMustNameOnePeer) {
  TempDir tmp;
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp);
  ASSERT_TRUE(kp.value().pin(random_fp(), "x", "", kWhen));
  EXPECT_FALSE(kp.value().find("SHA256:"));  // too short to name anyone
  EXPECT_FALSE(kp.value().find("abc"));
}

TEST(KnownPeers, LineNumbersPointAtTheEntry) {
  TempDir tmp;
  Fingerprint bob = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp && kp.value().pin(random_fp(), "alice", "", "") && kp.value().pin(bob, "bob", "", ""));
  auto reloaded = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(reloaded);
  int line = reloaded.value().check(bob).entry->line;
  std::ifstream in(tmp.path() / "known_peers");
  std::string text;
  for (int i = 0; i < line; ++i) std::getline(in, text);
  EXPECT_EQ(text, "bob " + bob.to_string() + " host=bob");
  EXPECT_EQ(kp.value().check(bob).entry->line, line);  // in-memory entry agrees
}

TEST(KnownPeers, MalformedLineIsAnErrorNamingFileAndLine) {
  TempDir tmp;
  std::ofstream(tmp.path() / "known_peers") << "# comment\n\nbob SHA256:not-a-fingerprint\n";
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_FALSE(kp);
  EXPECT_EQ(kp.error().code, Errc::bad_file_format);
  EXPECT_NE(kp.error().message.find("known_peers:3"), std::string::npos) << kp.error().message;
}

TEST(KnownPeers, ALabelUsedTwiceOrAnUnknownFieldIsAnError) {
  TempDir tmp;
  std::ofstream(tmp.path() / "known_peers") << "vm " << random_fp().to_string() << "\nvm " << random_fp().to_string()
                                            << "\n";
  auto twice = KnownPeers::load_in(tmp.path());
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("known_peers:2"), std::string::npos) << twice.error().message;
  EXPECT_NE(twice.error().message.find("already used on line 1"), std::string::npos) << twice.error().message;

  std::ofstream(tmp.path() / "known_peers", std::ios::trunc) << "vm " << random_fp().to_string() << " colour=blue\n";
  auto field = KnownPeers::load_in(tmp.path());
  ASSERT_FALSE(field);
  EXPECT_NE(field.error().message.find("colour=blue"), std::string::npos) << field.error().message;
}

TEST(KnownPeers, ConcurrentPinsAndRenamesKeepEveryEntry) {
  TempDir tmp;
  auto a = KnownPeers::load_in(tmp.path());
  auto b = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a.value().pin(random_fp(), "p1", "", kWhen));
  ASSERT_TRUE(b.value().pin(random_fp(), "p2", "", kWhen));  // b never saw p1 in memory
  // Renames rewrite the file while others append: nothing is lost.
  std::thread renamer([&] {
    auto r = KnownPeers::load_in(tmp.path());
    ASSERT_TRUE(r);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(r.value().relabel(i % 2 ? "q1" : "p1", i % 2 ? "p1" : "q1"));
  });
  std::thread pinner([&] {
    auto p = KnownPeers::load_in(tmp.path());
    ASSERT_TRUE(p);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(p.value().pin(random_fp(), "n", "", kWhen));
  });
  renamer.join();
  pinner.join();
  auto c = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c.value().entries().size(), 22u);
}

TEST(KnownPeers, RejectsAnInvalidLabel) {
  TempDir tmp;
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp);
  EXPECT_FALSE(kp.value().pin(random_fp(), "two words", "", kWhen));
  EXPECT_FALSE(kp.value().pin(random_fp(), "", "", kWhen));
  EXPECT_FALSE(kp.value().pin(random_fp(), "ok", "bad label", kWhen));
}

}  // namespace
}  // namespace braid::security
