// SPAKE2 (spake2.h): RFC 9382 Appendix B's known answers for
// SPAKE2-P256-SHA256-HKDF-HMAC, every published value; then what the
// vectors cannot show: random secrets, wrong passwords, bad shares, once only.
#include "engine/security/spake2.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace braid::security {
namespace {

std::vector<std::uint8_t> unhex(std::string_view hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

template <std::size_t N>
Secret<N> secret_of(std::string_view hex) {
  auto bytes = unhex(hex);
  EXPECT_EQ(bytes.size(), N);
  bytes.resize(N);
  return Secret<N>(std::span<const std::uint8_t, N>(bytes.data(), N));
}

template <class Bytes>
std::vector<std::uint8_t> bytes_of(const Bytes& b) {
  return std::vector<std::uint8_t>(b.data(), b.data() + b.size());
}

std::vector<std::uint8_t> text(std::string_view s) { return std::vector<std::uint8_t>(s.begin(), s.end()); }

// RFC 9382 Appendix B, as published (hex without the 0x; points split after
// the 0x04 prefix and X). No AAD in any of them; w, x and y given directly.
struct Vector {
  const char* a;
  const char* b;
  const char* w;
  const char* x;
  const char* y;
  const char* p_a;
  const char* p_b;
  const char* k;
  const char* tt_hash;
  const char* ke;
  const char* ka;
  const char* kca;
  const char* kcb;
  const char* conf_a;
  const char* conf_b;
};

const Vector kVectors[] = {
    {
        "server", "client",
        /* w */ "2ee57912099d31560b3a44b1184b9b4866e904c49d12ac5042c97dca461b1a5f",
        /* x */ "43dd0fd7215bdcb482879fca3220c6a968e66d70b1356cac18bb26c84a78d729",
        /* y */ "dcb60106f276b02606d8ef0a328c02e4b629f84f89786af5befb0bc75b6e66be",
        /* pA */ "04a56fa807caaa53a4d28dbb9853b9815c61a411118a6fe516a8798434751470f9"
                 "010153ac33d0d5f2047ffdb1a3e42c9b4e6be662766e1eeb4116988ede5f912c",
        /* pB */ "0406557e482bd03097ad0cbaa5df82115460d951e3451962f1eaf4367a420676d0"
                 "9857ccbc522686c83d1852abfa8ed6e4a1155cf8f1543ceca528afb591a1e0b7",
        /* K */ "0412af7e89717850671913e6b469ace67bd90a4df8ce45c2af19010175e37eed69"
                "f75897996d539356e2fa6a406d528501f907e04d97515fbe83db277b715d3325",
        /* Hash(TT) */ "0e0672dc86f8e45565d338b0540abe6915bdf72e2b35b5c9e5663168e960a91b",
        /* Ke */ "0e0672dc86f8e45565d338b0540abe69",
        /* Ka */ "15bdf72e2b35b5c9e5663168e960a91b",
        /* KcA */ "00c12546835755c86d8c0db7851ae86f",
        /* KcB */ "a9fa3406c3b781b93d804485430ca27a",
        /* A conf */ "58ad4aa88e0b60d5061eb6b5dd93e80d9c4f00d127c65b3b35b1b5281fee38f0",
        /* B conf */ "d3e2e547f1ae04f2dbdbf0fc4b79f8ecff2dff314b5d32fe9fcef2fb26dc459b",
    },
    {
        "", "client",
        /* w */ "0548d8729f730589e579b0475a582c1608138ddf7054b73b5381c7e883e2efae",
        /* x */ "403abbe3b1b4b9ba17e3032849759d723939a27a27b9d921c500edde18ed654b",
        /* y */ "903023b6598908936ea7c929bd761af6039577a9c3f9581064187c3049d87065",
        /* pA */ "04a897b769e681c62ac1c2357319a3d363f610839c4477720d24cbe32f5fd85f44"
                 "fb92ba966578c1b712be6962498834078262caa5b441ecfa9d4a9485720e918a",
        /* pB */ "04e0f816fd1c35e22065d5556215c097e799390d16661c386e0ecc84593974a61b"
                 "881a8c82327687d0501862970c64565560cb5671f696048050ca66ca5f8cc7fc",
        /* K */ "048f83ec9f6e4f87cc6f9dc740bdc2769725f923364f01c84148c049a39a735ebd"
                "a82eac03e00112fd6a5710682767cff5361f7e819e53d8d3c3a2922e0d837aa6",
        /* Hash(TT) */ "642f05c473c2cd79909f9a841e2f30a70bf89b18180af97353ba198789c2b963",
        /* Ke */ "642f05c473c2cd79909f9a841e2f30a7",
        /* Ka */ "0bf89b18180af97353ba198789c2b963",
        /* KcA */ "c6be376fc7cd1301fd0a13adf3e7bffd",
        /* KcB */ "b7243f4ae60440a49b3f8cab3c1fba07",
        /* A conf */ "47d29e6666af1b7dd450d571233085d7a9866e4d49d2645e2df975489521232b",
        /* B conf */ "3313c5cefc361d27fb16847a91c2a73b766ffa90a4839122a9b70a2f6bd1d6df",
    },
    {
        "server", "",
        /* w */ "626e0cdc7b14c9db3e52a0b1b3a768c98e37852d5db30febe0497b14eae8c254",
        /* x */ "07adb3db6bc623d3399726bfdbfd3d15a58ea776ab8a308b00392621291f9633",
        /* y */ "b6a4fc8dbb629d4ba51d6f91ed1532cf87adec98f25dd153a75accafafedec16",
        /* pA */ "04f88fb71c99bfffaea370966b7eb99cd4be0ff1a7d335caac4211c4afd855e2e1"
                 "5a873b298503ad8ba1d9cbb9a392d2ba309b48bfd7879aefd0f2cea6009763b0",
        /* pB */ "040c269d6be017dccb15182ac6bfcd9e2a14de019dd587eaf4bdfd353f031101e7"
                 "cca177f8eb362a6e83e7d5e729c0732e1b528879c086f39ba0f31a9661bd34db",
        /* K */ "0445ee233b8ecb51ebd6e7da3f307e88a1616bae2166121221fdc0dadb986afaf3"
                "ec8a988dc9c626fa3b99f58a7ca7c9b844bb3e8dd9554aafc5b53813504c1cbe",
        /* Hash(TT) */ "005184ff460da2ce59062c87733c299c3521297d736598fc0a1127600efa1afb",
        /* Ke */ "005184ff460da2ce59062c87733c299c",
        /* Ka */ "3521297d736598fc0a1127600efa1afb",
        /* KcA */ "f3da53604f0aeecea5a33be7bddf6edf",
        /* KcB */ "9e3f86848736f159bd92b6e107ec6799",
        /* A conf */ "bc9f9bbe99f26d0b2260e6456e05a86196a3307ec6663a18bf6ac825736533b2",
        /* B conf */ "c2370e1bf813b086dff0d834e74425a06e6390f48f5411900276dcccc5a297ec",
    },
    {
        "", "",
        /* w */ "7bf46c454b4c1b25799527d896508afd5fc62ef4ec59db1efb49113063d70cca",
        /* x */ "8cef65df64bb2d0f83540c53632de911b5b24b3eab6cc74a97609fd659e95473",
        /* y */ "d7a66f64074a84652d8d623a92e20c9675c61cb5b4f6a0063e4648a2fdc02d53",
        /* pA */ "04a65b367a3f613cf9f0654b1b28a1e3a8a40387956c8ba6063e8658563890f46c"
                 "a1ef6a676598889fc28de2950ab8120b79a5ef1ea4c9f44bc98f585634b46d66",
        /* pB */ "04589f13218822710d98d8b2123a079041052d9941b9cf88c6617ddb2fcc049466"
                 "2eea8ba6b64692dc318250030c6af045cb738bc81ba35b043c3dcb46adf6f58d",
        /* K */ "041a3c03d51b452537ca2a1fea6110353c6d5ed483c4f0f86f4492ca3f378d40a9"
                "94b4477f93c64d928edbbcd3e85a7c709b7ea73ee97986ce3d1438e135543772",
        /* Hash(TT) */ "fc6374762ba5cf11f4b2caa08b2cd1b9907ae0e26e8d6234318d91583cd74c86",
        /* Ke */ "fc6374762ba5cf11f4b2caa08b2cd1b9",
        /* Ka */ "907ae0e26e8d6234318d91583cd74c86",
        /* KcA */ "5dbd2f477166b7fb6d61febbd77a5563",
        /* KcB */ "7689b4654407a5faeffdc8f18359d8a3",
        /* A conf */ "dfb4db8d48ae5a675963ea5e6c19d98d4ea028d8e898dad96ea19a80ade95dca",
        /* B conf */ "d0f0609d1613138d354f7e95f19fb556bf52d751947241e8c7118df5ef0ae175",
    },
};

class Rfc9382Vectors : public ::testing::TestWithParam<Vector> {};

TEST_P(Rfc9382Vectors, EveryPublishedValueMatches) {
  const Vector& v = GetParam();
  const Spake2Context ctx{text(v.a), text(v.b), {}};
  const auto w = secret_of<kSpake2ScalarSize>(v.w);
  auto a = Spake2::start_with_fixed_secret_for_tests(Spake2::Side::a, ctx, w, secret_of<kSpake2ScalarSize>(v.x));
  auto b = Spake2::start_with_fixed_secret_for_tests(Spake2::Side::b, ctx, w, secret_of<kSpake2ScalarSize>(v.y));
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(bytes_of(a.value().share()), unhex(v.p_a));
  EXPECT_EQ(bytes_of(b.value().share()), unhex(v.p_b));

  auto ka = a.value().finish(b.value().share());
  auto kb = b.value().finish(a.value().share());
  ASSERT_TRUE(ka) << ka.error().message;
  ASSERT_TRUE(kb) << kb.error().message;
  for (const Spake2Keys* keys : {&ka.value(), &kb.value()}) {
    EXPECT_EQ(bytes_of(keys->k), unhex(v.k));
    EXPECT_EQ(bytes_of(keys->transcript_hash), unhex(v.tt_hash));
    EXPECT_EQ(bytes_of(keys->ke), unhex(v.ke));
    EXPECT_EQ(bytes_of(keys->ka), unhex(v.ka));
    EXPECT_EQ(bytes_of(keys->kca), unhex(v.kca));
    EXPECT_EQ(bytes_of(keys->kcb), unhex(v.kcb));
  }
  EXPECT_EQ(bytes_of(ka.value().confirmation), unhex(v.conf_a));
  EXPECT_EQ(bytes_of(kb.value().confirmation), unhex(v.conf_b));
  EXPECT_TRUE(ka.value().verify_peer(kb.value().confirmation));
  EXPECT_TRUE(kb.value().verify_peer(ka.value().confirmation));
  EXPECT_FALSE(ka.value().verify_peer(ka.value().confirmation));  // A's own MAC is not B's
}

INSTANTIATE_TEST_SUITE_P(AppendixB, Rfc9382Vectors, ::testing::ValuesIn(kVectors),
                         [](const ::testing::TestParamInfo<Vector>& info) {
                           return "A_" + std::string(*info.param.a ? info.param.a : "empty") + "_B_" +
                                  std::string(*info.param.b ? info.param.b : "empty");
                         });

Spake2Password password(std::string_view code) {
  auto w = spake2_password(text(code));
  EXPECT_TRUE(w) << w.error().message;
  return w ? w.value() : Spake2Password{};
}

const Spake2Context kContext{text("receiver key"), text("sender key"), text("channel binding")};

TEST(Spake2, SameCodeAgreesAndEachRunDrawsNewSecrets) {
  const auto w = password("7KQ2M9XD0TJ5RW3BHCZAP8N4");
  auto a1 = Spake2::start(Spake2::Side::a, kContext, w);
  auto a2 = Spake2::start(Spake2::Side::a, kContext, w);
  auto b = Spake2::start(Spake2::Side::b, kContext, w);
  ASSERT_TRUE(a1 && a2 && b);
  EXPECT_NE(a1.value().share(), a2.value().share());  // fresh x every time: a share is never repeated
  auto ka = a1.value().finish(b.value().share());
  auto kb = b.value().finish(a1.value().share());
  ASSERT_TRUE(ka && kb);
  EXPECT_TRUE(ka.value().ke == kb.value().ke);
  EXPECT_TRUE(kb.value().verify_peer(ka.value().confirmation));
  EXPECT_TRUE(ka.value().verify_peer(kb.value().confirmation));
  EXPECT_FALSE(ka.value().verify_peer(std::span<const std::uint8_t>(ka.value().confirmation.data(), 31)));
}

TEST(Spake2, WrongCodeFailsBothConfirmations) {
  auto a = Spake2::start(Spake2::Side::a, kContext, password("right code"));
  auto b = Spake2::start(Spake2::Side::b, kContext, password("wrong code"));
  ASSERT_TRUE(a && b);
  auto ka = a.value().finish(b.value().share());
  auto kb = b.value().finish(a.value().share());
  ASSERT_TRUE(ka && kb);
  EXPECT_FALSE(ka.value().ke == kb.value().ke);
  EXPECT_FALSE(ka.value().verify_peer(kb.value().confirmation));
  EXPECT_FALSE(kb.value().verify_peer(ka.value().confirmation));
}

TEST(Spake2, IdentitiesAndAadAreBound) {
  const auto w = password("code");
  for (const Spake2Context& other : {Spake2Context{text("receiver key"), text("another key"), text("channel binding")},
                                     Spake2Context{text("receiver key"), text("sender key"), text("other channel")}}) {
    auto a = Spake2::start(Spake2::Side::a, kContext, w);
    auto b = Spake2::start(Spake2::Side::b, other, w);
    ASSERT_TRUE(a && b);
    auto ka = a.value().finish(b.value().share());
    auto kb = b.value().finish(a.value().share());
    ASSERT_TRUE(ka && kb);
    EXPECT_FALSE(ka.value().verify_peer(kb.value().confirmation));
    EXPECT_FALSE(kb.value().verify_peer(ka.value().confirmation));
  }
}

TEST(Spake2, TwoPartiesOnTheSameSideDoNotAgree) {
  // A reflected share (our own, or another A's) is masked with M, not N.
  const auto w = password("code");
  auto a1 = Spake2::start(Spake2::Side::a, kContext, w);
  auto a2 = Spake2::start(Spake2::Side::a, kContext, w);
  ASSERT_TRUE(a1 && a2);
  auto k1 = a1.value().finish(a2.value().share());
  auto k2 = a2.value().finish(a1.value().share());
  ASSERT_TRUE(k1 && k2);
  EXPECT_FALSE(k1.value().verify_peer(k2.value().confirmation));
}

TEST(Spake2, BadSharesAreRefused) {
  const auto w = password("code");
  auto b = Spake2::start(Spake2::Side::b, kContext, w);
  ASSERT_TRUE(b);
  Spake2Share good = b.value().share();
  std::vector<std::vector<std::uint8_t>> bad;
  bad.push_back({});                                                 // empty
  bad.push_back(std::vector<std::uint8_t>(good.begin(), good.end() - 1));  // short
  bad.push_back(unhex("02886e2f97ace46e55ba9dd7242579f2993b64e16ef3dcab95afd497333d8fa12f"));  // compressed M
  auto off_curve = bytes_of(good);
  off_curve.back() ^= 1;  // y no longer fits x
  bad.push_back(off_curve);
  auto prefix = bytes_of(good);
  prefix[0] = 0x06;  // hybrid encoding: not the ciphersuite's
  bad.push_back(prefix);
  bad.push_back(std::vector<std::uint8_t>(kSpake2ShareSize, 0));  // all zeros
  auto origin = std::vector<std::uint8_t>(kSpake2ShareSize, 0);
  origin[0] = 0x04;  // (0, 0): not on the curve
  bad.push_back(origin);
  for (const auto& share : bad) {
    auto a = Spake2::start(Spake2::Side::a, kContext, w);
    ASSERT_TRUE(a);
    auto k = a.value().finish(share);
    ASSERT_FALSE(k) << share.size();
    EXPECT_EQ(k.error().code, Errc::protocol_error) << k.error().message;
  }
}

TEST(Spake2, AShareThatCancelsTheMaskIsRefused) {
  // pB = w·N: K would be the identity. Only someone who knows w can build
  // it; it must still never produce keys. (y = 0 gives exactly w·N.)
  const auto w = password("code");
  auto b = Spake2::start_with_fixed_secret_for_tests(Spake2::Side::b, kContext, w, Secret<kSpake2ScalarSize>{});
  auto a = Spake2::start(Spake2::Side::a, kContext, w);
  ASSERT_TRUE(a && b);
  auto k = a.value().finish(b.value().share());
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().code, Errc::pairing_failed) << k.error().message;
}

TEST(Spake2, FinishesOnceOnly) {
  const auto w = password("code");
  auto a = Spake2::start(Spake2::Side::a, kContext, w);
  auto b1 = Spake2::start(Spake2::Side::b, kContext, w);
  auto b2 = Spake2::start(Spake2::Side::b, kContext, w);
  ASSERT_TRUE(a && b1 && b2);
  ASSERT_TRUE(a.value().finish(b1.value().share()));
  auto again = a.value().finish(b2.value().share());  // x must never answer a second share
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::invalid_argument);
  // Nor after a failed finish: a bad share also uses up the exchange.
  auto a2 = Spake2::start(Spake2::Side::a, kContext, w);
  ASSERT_TRUE(a2);
  ASSERT_FALSE(a2.value().finish(std::vector<std::uint8_t>{1, 2, 3}));
  EXPECT_EQ(a2.value().finish(b2.value().share()).error().code, Errc::invalid_argument);
}

TEST(Spake2, PasswordScalarIsDeterministicReducedAndCodeSpecific) {
  const auto w1 = password("7KQ2M9XD0TJ5RW3BHCZAP8N4");
  EXPECT_TRUE(w1 == password("7KQ2M9XD0TJ5RW3BHCZAP8N4"));
  EXPECT_FALSE(w1 == password("7KQ2M9XD0TJ5RW3BHCZAP8N5"));
  // Below p = ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551: a
  // start() with it succeeds, one with p itself does not.
  auto a = Spake2::start(Spake2::Side::a, kContext, w1);
  EXPECT_TRUE(a);
  auto p = secret_of<kSpake2ScalarSize>("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
  auto at_p = Spake2::start(Spake2::Side::a, kContext, p);
  ASSERT_FALSE(at_p);
  EXPECT_EQ(at_p.error().code, Errc::invalid_argument);
  auto zero = Spake2::start(Spake2::Side::a, kContext, Spake2Password{});
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code, Errc::invalid_argument);
}

}  // namespace
}  // namespace braid::security
