// Opening a UDP datagram with OpenSSL 3.0: does the way the tag is handed
// over matter? 1 GiB of 1452-byte payloads (4096 sealed ones, opened in
// turn), each with its own nonce and a 21-byte AAD in one update, the tag
//   variant 0: set with EVP_CIPHER_CTX_ctrl(EVP_CTRL_AEAD_SET_TAG) (DatagramOpener),
//   variant 1: set with EVP_CIPHER_CTX_set_params,
//   variant 2: passed as a parameter to EVP_DecryptInit_ex2 with the nonce.
// CPU seconds of this thread per GiB, variants interleaved, 7 rounds,
// median and minimum. Under `perf record --call-graph dwarf` it shows where
// the per-datagram strcmp comes from (EVP_CIPHER_CTX_get_iv_length, called
// by every init that takes a nonce).
//
//   c++ -O2 -std=c++20 bench/udp/open_calls_probe.cpp -o /tmp/open_calls_probe -lcrypto
#include <openssl/core_names.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

namespace {
double cpu() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}
}  // namespace

int main() {
  EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  EVP_CIPHER_CTX* e = EVP_CIPHER_CTX_new();
  EVP_CIPHER_CTX* d = EVP_CIPHER_CTX_new();
  unsigned char key[32] = {1}, iv[12] = {2}, aad[21] = {3};
  EVP_EncryptInit_ex2(e, cipher, key, nullptr, nullptr);
  EVP_DecryptInit_ex2(d, cipher, key, nullptr, nullptr);
  const size_t dg = 1452, kept = 4096;
  std::vector<unsigned char> ct(kept * dg), tags(kept * 16), out(dg + 16);
  int len = 0;
  for (size_t i = 0; i < kept; ++i) {
    unsigned char* p = &ct[i * dg];
    for (size_t j = 0; j < dg; ++j) p[j] = static_cast<unsigned char>(j * i);
    iv[11] = static_cast<unsigned char>(i);
    iv[10] = static_cast<unsigned char>(i >> 8);
    EVP_EncryptInit_ex2(e, nullptr, nullptr, iv, nullptr);
    EVP_EncryptUpdate(e, nullptr, &len, aad, 21);
    EVP_EncryptUpdate(e, p, &len, p, static_cast<int>(dg));
    EVP_EncryptFinal_ex(e, &tags[i * 16], &len);
    EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_AEAD_GET_TAG, 16, &tags[i * 16]);
  }
  std::vector<double> took[3];
  const size_t n = (size_t{1} << 30) / dg;
  int refused = 0;
  for (int round = 0; round < 7; ++round) {
    for (int v = 0; v < 3; ++v) {
      const double t0 = cpu();
      for (size_t k = 0; k < n; ++k) {
        const size_t i = k % kept;
        iv[11] = static_cast<unsigned char>(i);
        iv[10] = static_cast<unsigned char>(i >> 8);
        unsigned char* tag = &tags[i * 16];
        OSSL_PARAM ps[2] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, 16), OSSL_PARAM_END};
        bool ok = false;
        if (v == 0)
          ok = EVP_DecryptInit_ex2(d, nullptr, nullptr, iv, nullptr) == 1 &&
               EVP_CIPHER_CTX_ctrl(d, EVP_CTRL_AEAD_SET_TAG, 16, tag) == 1;
        else if (v == 1)
          ok = EVP_DecryptInit_ex2(d, nullptr, nullptr, iv, nullptr) == 1 && EVP_CIPHER_CTX_set_params(d, ps) == 1;
        else
          ok = EVP_DecryptInit_ex2(d, nullptr, nullptr, iv, ps) == 1;
        ok = ok && EVP_DecryptUpdate(d, nullptr, &len, aad, 21) == 1 &&
             EVP_DecryptUpdate(d, out.data(), &len, &ct[i * dg], static_cast<int>(dg)) == 1 &&
             EVP_DecryptFinal_ex(d, out.data() + dg, &len) == 1;
        refused += !ok;
      }
      took[v].push_back(cpu() - t0);
    }
  }
  for (int v = 0; v < 3; ++v) {
    std::sort(took[v].begin(), took[v].end());
    std::printf("variant %d: median %.3f, min %.3f CPU-s per GiB\n", v, took[v][took[v].size() / 2], took[v][0]);
  }
  std::printf("refused (must be 0): %d\n", refused);
  EVP_CIPHER_CTX_free(e);
  EVP_CIPHER_CTX_free(d);
  EVP_CIPHER_free(cipher);
  return refused == 0 ? 0 : 1;
}
