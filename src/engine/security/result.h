// Result and error codes of braid's security layer.
//
// Expected failures (a wrong pairing code, a changed peer key, a bad path from
// the peer) come back as values, never as exceptions: a small enum the engine
// can switch on, plus a full sentence for the person at the terminal.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace braid::security {

enum class Errc {
  io_error,               // a system call failed (message says which, and errno)
  crypto_error,           // OpenSSL failed internally (message carries its error queue)
  invalid_argument,       // the caller broke a documented precondition
  config_dir_unavailable, // neither XDG_CONFIG_HOME nor HOME is usable
  insecure_permissions,   // a private key or its directory is readable by others
  bad_file_format,        // an identity or known-peers file could not be parsed
  bad_pairing_code,       // the text is not a pairing code (length, letters)
  pairing_code_mistyped,  // right shape, but a word not in the list or a wrong check letter: a typo
  weak_pairing_code,      // a code a person chose is too easy to guess (code_strength.h)
  label_taken,            // a known-peers label already names another key
  no_such_peer,           // no known peer has that label (or fingerprint prefix), or several do
  handshake_failed,       // the TLS 1.3 handshake did not complete
  bad_peer_certificate,   // no certificate, or one braid cannot use
  peer_key_changed,       // the peer was addressed by a label that pins another key
  peer_refused_us,        // the peer pins another key for *us*
  pairing_required,       // unknown peer (either side) and no code was given
  pairing_failed,         // the pairing proofs did not match: wrong code
  protocol_error,         // the peer sent something braid does not expect
  connection_closed,      // the peer closed the connection during the exchange
  timed_out,              // the peer did not answer within the I/O timeout
  not_braid,              // what answered the handshake is not a braid peer (not TLS, or TLS without a braid key)
  path_invalid,           // a peer-supplied relative path is not acceptable
  path_symlink,           // a destination path component is a symlink
  path_escapes,           // resolution would leave the destination directory
  path_not_directory,     // a destination path component is not a directory
};

// Short stable identifier of a code, e.g. "peer_key_changed" (for logs/JSON).
std::string_view errc_name(Errc code);

struct Error {
  Errc code;
  std::string message;  // a complete sentence for a person; names files, peers, values
};

// 'text' in single quotes, for messages. (Built by appending: g++ 12 gives a
// false -Wrestrict on "'" + std::string at -O2.)
inline std::string in_quotes(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out.append(text);
  out += '\'';
  return out;
}

inline Error make_error(Errc code, std::string message) { return Error{code, std::move(message)}; }

// Either a T or an Error. Small on purpose: std::expected is not in g++ 12.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_{Errc::invalid_argument, {}};
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace braid::security
