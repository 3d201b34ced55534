// Does sealing a UDP lane's payload straight from the held piece into the
// datagram (DatagramSealer::seal with Gathered payloads) beat copying it into
// the datagram and sealing there? AES-256-GCM per datagram as
// datagram_crypto.cpp does it (a new nonce, 8 bytes of session and the
// 13-byte header as AAD); pieces of 1 MiB from a 64 MiB ring (beyond L2, as
// a piece held for resends is by the time its last datagrams go). CPU
// seconds of this thread per GiB of payload, the variants interleaved.
//
//   c++ -O2 -std=c++20 bench/udp/gather_seal_probe.cpp -o /tmp/gather_seal_probe -lcrypto
#include <openssl/evp.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

int main() {
  const size_t header = 13, frame_header = 8, tag = 16, ring = 64 << 20;
  const size_t total = size_t{2} << 30;  // payload bytes per variant and repetition
  std::vector<unsigned char> src(ring);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (unsigned char)(i * 131);
  unsigned char key[32] = {1}, nonce[12] = {2}, session[8] = {3};
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  EVP_EncryptInit_ex2(c, EVP_aes_256_gcm(), key, nullptr, nullptr);
  auto cpu = [] { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; };
  for (size_t packet : {size_t{1472}, size_t{9000}}) {
    const size_t payload = packet - header - frame_header - tag;
    std::vector<unsigned char> slot(packet, 9);
    double sum[2] = {0, 0};
    for (int rep = 0; rep < 4; ++rep) {
      for (int gather = 0; gather < 2; ++gather) {
        const double t0 = cpu();
        int len = 0;
        size_t at = 0;
        for (size_t done = 0; done < total; done += payload) {
          if (at + payload > ring) at = 0;
          const unsigned char* from = src.data() + at;
          at += payload;
          unsigned char* body = slot.data() + header;
          nonce[11] ^= (unsigned char)done;
          EVP_EncryptInit_ex2(c, nullptr, nullptr, nonce, nullptr);
          EVP_EncryptUpdate(c, nullptr, &len, session, 8);
          EVP_EncryptUpdate(c, nullptr, &len, slot.data(), (int)header);
          EVP_EncryptUpdate(c, body, &len, body, (int)frame_header);
          if (gather) {
            EVP_EncryptUpdate(c, body + frame_header, &len, from, (int)payload);
          } else {
            std::memcpy(body + frame_header, from, payload);
            EVP_EncryptUpdate(c, body + frame_header, &len, body + frame_header, (int)payload);
          }
          EVP_EncryptFinal_ex(c, slot.data() + packet - tag, &len);
          EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, (int)tag, slot.data() + packet - tag);
        }
        const double per_gib = (cpu() - t0) / (double(total) / (1 << 30));
        sum[gather] += per_gib;
        std::printf("%zu-byte datagrams, %s: %.4f CPU-s/GiB\n", packet, gather ? "sealed from the piece" : "copy, then seal",
                    per_gib);
      }
    }
    std::printf("%zu-byte datagrams: mean copy+seal %.4f, gathered %.4f CPU-s/GiB (%.3fx)\n", packet, sum[0] / 4,
                sum[1] / 4, sum[1] / sum[0]);
  }
  EVP_CIPHER_CTX_free(c);
}
