#include "peer_name.h"

#include <unistd.h>

namespace braid::security {
namespace {
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '@' || c == ':' || c == '+' || c == '-';
}
}  // namespace

bool is_valid_peer_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxPeerNameLength) return false;
  for (char c : name)
    if (!name_char(c)) return false;
  return true;
}

std::string sanitize_peer_name(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, kMaxPeerNameLength)) out += name_char(c) ? c : '-';
  return out.empty() ? "braid-host" : out;
}

std::string default_peer_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return sanitize_peer_name("");
  return sanitize_peer_name(host);
}

}  // namespace braid::security
