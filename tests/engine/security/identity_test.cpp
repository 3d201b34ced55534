#include "engine/security/identity.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <thread>

#include "engine/security/files.h"
#include "test_support.h"

namespace braid::security {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

TEST(Identity, FirstUseCreatesPrivateKeyAndDirectory) {
  TempDir tmp;
  ScopedEnv xdg("XDG_CONFIG_HOME", tmp.path().string());
  auto id = Identity::load_or_create_default();
  ASSERT_TRUE(id) << id.error().message;
  const auto dir = tmp.path() / "braid";
  EXPECT_EQ(id.value().dir(), dir);
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(dir / "identity.key"), 0600u);
  EXPECT_TRUE(std::filesystem::exists(dir / "identity.crt"));
  EXPECT_EQ(EVP_PKEY_get_id(id.value().key()), EVP_PKEY_ED25519);
}

TEST(Identity, LoadsTheSameKeyAgain) {
  TempDir tmp;
  auto a = Identity::load_or_create(tmp.path() / "braid", "alice");
  auto b = Identity::load_or_create(tmp.path() / "braid", "ignored-for-existing");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a.value().fingerprint(), b.value().fingerprint());
  EXPECT_EQ(b.value().name(), "alice");
}

TEST(Identity, DifferentHostsDifferentFingerprints) {
  TempDir t1, t2;
  auto a = Identity::load_or_create(t1.path(), "a");
  auto b = Identity::load_or_create(t2.path(), "b");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a.value().fingerprint(), b.value().fingerprint());
}

TEST(Identity, FingerprintPrintsAndParses) {
  TempDir tmp;
  auto id = Identity::load_or_create(tmp.path(), "alice");
  ASSERT_TRUE(id);
  std::string text = id.value().fingerprint().to_string();
  EXPECT_EQ(text.rfind("SHA256:", 0), 0u);
  EXPECT_EQ(text.size(), 7u + 43u);
  auto parsed = Fingerprint::parse(text);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed.value(), id.value().fingerprint());
  EXPECT_FALSE(Fingerprint::parse("SHA256:short"));
  EXPECT_FALSE(Fingerprint::parse("MD5:" + text.substr(7)));
}

TEST(Identity, FallsBackToHomeConfig) {
  TempDir tmp;
  ScopedEnv xdg("XDG_CONFIG_HOME", std::nullopt);
  ScopedEnv home("HOME", tmp.path().string());
  auto dir = default_config_dir();
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir.value(), tmp.path() / ".config" / "braid");
}

TEST(Identity, IgnoresRelativeXdgConfigHome) {
  TempDir tmp;
  ScopedEnv xdg("XDG_CONFIG_HOME", std::string("relative/dir"));
  ScopedEnv home("HOME", tmp.path().string());
  auto dir = default_config_dir();
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir.value(), tmp.path() / ".config" / "braid");
}

TEST(Identity, RefusesAKeyOthersCanRead) {
  TempDir tmp;
  ASSERT_TRUE(Identity::load_or_create(tmp.path(), "alice"));
  ASSERT_EQ(::chmod((tmp.path() / "identity.key").c_str(), 0644), 0);
  auto again = Identity::load_or_create(tmp.path(), "alice");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::insecure_permissions);
  EXPECT_NE(again.error().message.find("chmod 600"), std::string::npos) << again.error().message;
}

TEST(Identity, TightensTheDirectoryTo0700) {
  TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
  ASSERT_TRUE(Identity::load_or_create(tmp.path(), "alice"));
  EXPECT_EQ(mode_of(tmp.path()), 0700u);
}

TEST(Identity, RebuildsAMissingCertificateForTheSameKey) {
  TempDir tmp;
  auto a = Identity::load_or_create(tmp.path(), "alice");
  ASSERT_TRUE(a);
  std::filesystem::remove(tmp.path() / "identity.crt");
  auto b = Identity::load_or_create(tmp.path(), "alice");
  ASSERT_TRUE(b);
  EXPECT_EQ(a.value().fingerprint(), b.value().fingerprint());
  EXPECT_EQ(X509_check_private_key(b.value().certificate(), b.value().key()), 1);
}

TEST(Identity, ConcurrentFirstUseAgreesOnOneKey) {
  TempDir tmp;
  std::optional<Result<Identity>> r1, r2;
  std::thread t1([&] { r1.emplace(Identity::load_or_create(tmp.path(), "alice")); });
  std::thread t2([&] { r2.emplace(Identity::load_or_create(tmp.path(), "alice")); });
  t1.join();
  t2.join();
  ASSERT_TRUE(*r1 && *r2);
  EXPECT_EQ(r1->value().fingerprint(), r2->value().fingerprint());
}

TEST(Identity, RejectsAnInvalidName) {
  TempDir tmp;
  auto id = Identity::load_or_create(tmp.path(), "bad name\x1b[31m");
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code, Errc::invalid_argument);
}

}  // namespace
}  // namespace braid::security
