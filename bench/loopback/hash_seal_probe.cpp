// Does one loop over cache-sized blocks (hash a block, seal it) beat the
// sender's two passes over a 256 KiB frame (XXH3-128 over the frame, then
// AES-256-GCM over it)? The frame is first copied in from a 16 MiB ring, as
// pread leaves it; CPU seconds of this thread per GiB, variants interleaved.
//
//   c++ -O2 -std=c++20 bench/loopback/hash_seal_probe.cpp -o /tmp/hash_seal_probe -lcrypto -lxxhash
#include <openssl/evp.h>
#include <xxhash.h>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <vector>
int main() {
  const size_t frame = 256 << 10, frames = 4096 * 2;  // 2 GiB through a 16 MiB ring (beyond L2, in L3)
  std::vector<unsigned char> src(16 << 20, 7), out(frame + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (unsigned char)(i * 131);
  unsigned char key[32] = {1}, iv[12] = {2}, tag[16];
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), nullptr, key, iv);
  XXH3_state_t* h = XXH3_createState();
  auto cpu = [] { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; };
  for (int rep = 0; rep < 4; ++rep) {
    for (size_t block : {size_t(0), size_t(16 << 10), size_t(64 << 10), size_t(0)}) {
      double t0 = cpu();
      XXH3_128bits_reset(h);
      for (size_t f = 0; f < frames; ++f) {
        unsigned char* p = src.data() + (f * frame) % src.size();
        // the frame as pread leaves it: copy into the frame buffer
        std::memcpy(out.data(), p, frame);
        int len;
        EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, iv);
        if (block == 0) {
          XXH3_128bits_update(h, out.data(), frame);
          EVP_EncryptUpdate(c, out.data(), &len, out.data(), (int)frame);
        } else {
          for (size_t b = 0; b < frame; b += block) {
            XXH3_128bits_update(h, out.data() + b, block);
            EVP_EncryptUpdate(c, out.data() + b, &len, out.data() + b, (int)block);
          }
        }
        EVP_EncryptFinal_ex(c, tag, &len);
      }
      double s = cpu() - t0;
      std::printf("%s block %3zu KiB: %.3f s per GiB\n", block ? "combined" : "two-pass", block >> 10,
                  s / (frames * frame / double(1 << 30)));
    }
  }
}
