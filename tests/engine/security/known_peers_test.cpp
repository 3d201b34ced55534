#include "engine/security/known_peers.h"

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <fstream>

#include "test_support.h"

namespace braid::security {
namespace {

using testing::TempDir;

Fingerprint random_fp() {
  std::array<std::uint8_t, 32> b{};
  RAND_bytes(b.data(), 32);
  return Fingerprint(b);
}

TEST(KnownPeers, MissingFileIsEmpty) {
  TempDir tmp;
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp);
  EXPECT_TRUE(kp.value().entries().empty());
  EXPECT_EQ(kp.value().check("bob", random_fp()).verdict, KnownPeers::Verdict::unknown);
}

TEST(KnownPeers, AddThenLookUpAndPersist) {
  TempDir tmp;
  Fingerprint bob = random_fp(), carol = random_fp();
  {
    auto kp = KnownPeers::load_in(tmp.path());
    ASSERT_TRUE(kp);
    ASSERT_TRUE(kp.value().add("bob", bob));
    ASSERT_TRUE(kp.value().add("carol", carol));
    ASSERT_TRUE(kp.value().add("bob", bob));  // idempotent
    EXPECT_EQ(kp.value().check("bob", bob).verdict, KnownPeers::Verdict::pinned);
  }
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp) << kp.error().message;
  ASSERT_EQ(kp.value().entries().size(), 2u);
  auto c = kp.value().check("carol", carol);
  EXPECT_EQ(c.verdict, KnownPeers::Verdict::pinned);
  ASSERT_TRUE(c.entry);
  EXPECT_EQ(c.entry->name, "carol");
  EXPECT_EQ(kp.value().check("dave", random_fp()).verdict, KnownPeers::Verdict::unknown);
}

TEST(KnownPeers, TheKeyNotTheNameIsTheIdentity) {
  TempDir tmp;
  Fingerprint bob = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp && kp.value().add("bob", bob));
  auto c = kp.value().check("bob-renamed", bob);
  EXPECT_EQ(c.verdict, KnownPeers::Verdict::pinned);
  EXPECT_EQ(c.entry->name, "bob");
}

TEST(KnownPeers, ChangedKeyIsDetectedWithALoudMessage) {
  TempDir tmp;
  Fingerprint old_fp = random_fp(), new_fp = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp);
  ASSERT_TRUE(kp.value().add("carol", random_fp()));
  ASSERT_TRUE(kp.value().add("bob", old_fp));
  auto c = kp.value().check("bob", new_fp);
  ASSERT_EQ(c.verdict, KnownPeers::Verdict::changed);
  ASSERT_TRUE(c.entry);
  std::string msg = key_changed_message(*c.entry, new_fp, kp.value().file());
  EXPECT_NE(msg.find("'bob'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(old_fp.to_string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(new_fp.to_string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(kp.value().file().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("line " + std::to_string(c.entry->line)), std::string::npos) << msg;
  EXPECT_NE(msg.find("WARNING"), std::string::npos);

  auto add = kp.value().add("bob", new_fp);
  ASSERT_FALSE(add);
  EXPECT_EQ(add.error().code, Errc::peer_key_changed);
}

TEST(KnownPeers, LineNumbersPointAtTheEntry) {
  TempDir tmp;
  Fingerprint bob = random_fp();
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp && kp.value().add("alice", random_fp()) && kp.value().add("bob", bob));
  auto reloaded = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(reloaded);
  int line = reloaded.value().check("bob", bob).entry->line;
  std::ifstream in(tmp.path() / "known_peers");
  std::string text;
  for (int i = 0; i < line; ++i) std::getline(in, text);
  EXPECT_EQ(text, "bob " + bob.to_string());
  EXPECT_EQ(kp.value().check("bob", bob).entry->line, line);  // in-memory entry agrees
}

TEST(KnownPeers, MalformedLineIsAnErrorNamingFileAndLine) {
  TempDir tmp;
  std::ofstream(tmp.path() / "known_peers") << "# comment\n\nbob SHA256:not-a-fingerprint\n";
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_FALSE(kp);
  EXPECT_EQ(kp.error().code, Errc::bad_file_format);
  EXPECT_NE(kp.error().message.find("known_peers:3"), std::string::npos) << kp.error().message;
}

TEST(KnownPeers, ConcurrentAddsKeepEveryEntry) {
  TempDir tmp;
  auto a = KnownPeers::load_in(tmp.path());
  auto b = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a.value().add("p1", random_fp()));
  ASSERT_TRUE(b.value().add("p2", random_fp()));  // b never saw p1 in memory
  auto c = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(c);
  EXPECT_EQ(c.value().entries().size(), 2u);
}

TEST(KnownPeers, RejectsAnInvalidName) {
  TempDir tmp;
  auto kp = KnownPeers::load_in(tmp.path());
  ASSERT_TRUE(kp);
  EXPECT_FALSE(kp.value().add("two words", random_fp()));
  EXPECT_FALSE(kp.value().add("", random_fp()));
}

}  // namespace
}  // namespace braid::security
