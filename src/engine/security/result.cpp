#include "result.h"

namespace braid::security {

std::string_view errc_name(Errc code) {
  switch (code) {
    case Errc::io_error: return "io_error";
    case Errc::crypto_error: return "crypto_error";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::config_dir_unavailable: return "config_dir_unavailable";
    case Errc::insecure_permissions: return "insecure_permissions";
    case Errc::bad_file_format: return "bad_file_format";
    case Errc::bad_pairing_code: return "bad_pairing_code";
    case Errc::pairing_code_mistyped: return "pairing_code_mistyped";
    case Errc::weak_pairing_code: return "weak_pairing_code";
    case Errc::label_taken: return "label_taken";
    case Errc::no_such_peer: return "no_such_peer";
    case Errc::handshake_failed: return "handshake_failed";
    case Errc::bad_peer_certificate: return "bad_peer_certificate";
    case Errc::peer_key_changed: return "peer_key_changed";
    case Errc::peer_refused_us: return "peer_refused_us";
    case Errc::pairing_required: return "pairing_required";
    case Errc::pairing_failed: return "pairing_failed";
    case Errc::protocol_error: return "protocol_error";
    case Errc::connection_closed: return "connection_closed";
    case Errc::timed_out: return "timed_out";
    case Errc::not_braid: return "not_braid";
    case Errc::path_invalid: return "path_invalid";
    case Errc::path_symlink: return "path_symlink";
    case Errc::path_escapes: return "path_escapes";
    case Errc::path_not_directory: return "path_not_directory";
  }
  return "unknown_error";
}

}  // namespace braid::security
