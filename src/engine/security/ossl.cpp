#include "ossl.h"

#include <openssl/err.h>

namespace braid::security::ossl {

std::string drain_errors() {
  std::string out;
  char buf[256];
  while (unsigned long e = ERR_get_error()) {
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

Error crypto_error(std::string_view what) {
  std::string msg(what);
  std::string queue = drain_errors();
  if (!queue.empty()) msg += " (OpenSSL: " + queue + ")";
  return make_error(Errc::crypto_error, std::move(msg));
}

}  // namespace braid::security::ossl
