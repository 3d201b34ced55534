// braid's messages on a lane, one per sealed frame (the frame's `type` byte
// says which; engine/security/frame_format.h defines the sealed envelope).
// Pure encode/decode: no I/O. Every integer is big endian; every name is a
// u32-length-prefixed byte string kept byte for byte (names need not be
// UTF-8). Decoding checks every length against the bytes present and against
// the limits below, so a hostile peer cannot make the decoder over-read or
// allocate without bound.
//
// Direction: c = the sender of files (TLS client), s = the receiver.
//   lane_join     c→s  first frame on every lane but the first: binds it to the session
//   lane_welcome  s→c  the receiver took the lane
//   addresses     s→c  where further lanes may connect
//   offer         c→s  a transfer: id, hash algorithm, chunk size, manifest
//   accept/refuse s→c  the receiver's answer to an offer (accept: the ranges
//                      it already holds from an interrupted run, for resume)
//   piece_data    c→s  bytes of one piece (see PieceHeader)
//   piece_abort   c→s  the sender stopped sending a piece on this lane
//   ack           s→c  a piece verified and written (with the receive duration)
//   lane_closed   both a lane died, and why (sent over another lane)
//   done          c→s  every piece was acked; the root hash to check
//   result        s→c  the receiver's verdict on a whole transfer
//   error         both a fatal session error with a reason
//   bye           c→s  the session ends (now, or right behind a transfer's result)
//   udp_open      c→s  open a UDP lane: its id and the receiver address to bind
//   udp_ready     s→c  the receiver's UDP socket for that lane (or why not)
//   udp_piece     c→s  a piece sent on a UDP lane: where it goes and its hash
//   lane_ack      s→c  an ack for a piece that came on another lane (UDP lanes)
//   cancel        c→s  the sender stops a transfer; the session goes on
//   offer_part    c→s  more entries of an offer too big for one frame
//   accept_part   s→c  the first N entries of a continued offer are accepted:
//                      their pieces may flow before the last part (protocol 9)
// The udp_* messages and lane_ack travel over a TCP lane (docs/engine.md).
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace braid::wire {

enum class FrameType : uint8_t {
  lane_join = 1,
  lane_welcome = 2,
  addresses = 3,
  offer = 4,
  accept = 5,
  refuse = 6,
  piece_data = 7,
  piece_abort = 8,
  ack = 9,
  lane_closed = 10,
  done = 11,
  result = 12,
  error = 13,
  bye = 14,
  udp_open = 15,
  udp_ready = 16,
  udp_piece = 17,
  lane_ack = 18,
  cancel = 19,
  offer_part = 20,
  accept_part = 21,
  accept_files = 22,
};

/// 2: UDP lanes (udp_open, udp_ready, udp_piece, lane_ack).
/// 3: resume (accept lists the ranges the receiver holds; refuse reason busy).
/// 4: the offer's flags byte (discard: `braid probe`; sync options), cancel,
///    the accept's file verdicts and extraneous paths (sync).
/// 5: the offer's entry details after its flags byte (sparse files' data
///    ranges, hard links).
/// 6: an offer in parts (its flags byte's bit 7, offer_part): no entry limit
///    from the frame size.
/// 7: entry details for owner and group (-o, -g) and extended attributes
///    with POSIX ACLs (-X, -A); compressed pieces.
/// 8: the goodbye announced with done (bye's after_transfer: the receiver
///    closes its lanes right behind its verdict), and done sent as soon as
///    every piece's hash is known (the receiver holds it until the last
///    bytes are in). A receiver of protocol 7 ignores such a bye (a frame it
///    cannot decode) and ends at the sender's plain bye, as before. The
///    receiver says its protocol in its addresses (Addresses::protocol), so
///    a sender tells the user which feature an older receiver lacks
///    (protocol_needs.hpp); the offer's backup options after its entry
///    details (SyncOptions::backup_suffix, backup_dir).
/// 9: pieces before the last part: a continued offer may say that its
///    sender takes early answers (Offer::early_answers, an options byte
///    after the backup options), and the receiver may then answer its
///    parts one by one with accept_part; the sender sends pieces of the
///    entries accepted so far while it is still walking. The accept after
///    the last part closes the offer as before. A sender only asks a
///    receiver that said 9; a receiver only answers early when asked, so a
///    protocol-8 peer on either end sees exactly protocol 8.
/// 10: entries in path order: a continued offer answered part by part may
///    say that its entries come in path order, each directory's entries
///    right after it and by name (byte order), and that none is a hard
///    link (Offer::ordered, bit 1 of the options byte); the receiver then
///    checks the order instead of holding every path, and lets go of the
///    entries it has written (issue 18). A sender says it only to a
///    receiver that said 10.
/// 11: a sync's verdicts in several frames: the receiver of a sync whose
///    target holds more files of the offer than one accept may list
///    (kMaxManifestEntries) sends the first of its verdicts in accept_files
///    frames right before the accept, which lists the rest — when the
///    offer says its sender takes them so (Offer::verdicts_apart, bit 2
///    of the options byte, which a sync's offer to a receiver that said 11
///    has). An older sender is refused, in a line that says why.
constexpr uint32_t kProtocolVersion = 11;
/// The last protocol whose receivers do not say theirs: a receiver that
/// says nothing speaks this one or an older one.
constexpr uint32_t kLastSilentProtocol = 7;
constexpr size_t kMaxReasonLength = 1024;
constexpr size_t kMaxPathBytes = 4095;     // PATH_MAX - 1
constexpr size_t kMaxAddresses = 64;
/// Entries one offer or offer_part frame may carry (and file verdicts one
/// accept may list).
constexpr size_t kMaxManifestEntries = 1u << 20;
/// Makes room in `v` for `n` more elements: when it must move, room for a
/// quarter more than it holds (or the `n`, if more), not twice as many as
/// push_back and insert would. A vector that grows by offer parts to a
/// million entries then holds at most a quarter of spare room, not up to
/// the same again — and while it moves, 2.25 times its entries at once
/// instead of 3 (issue 18, memory per manifest entry).
template <class T>
void reserve_to_append(std::vector<T>& v, size_t n) {
  if (v.capacity() - v.size() >= n) return;
  v.reserve(std::max(v.size() + n, v.size() + v.size() / 4));
}
/// Entries a whole offer may have, over all its parts: far above any tree
/// we have seen (a million files take ~0.2 GB on each end, docs/engine.md
/// "Big trees"), and below what entry indices (u32) can name.
constexpr size_t kMaxOfferEntries = 1u << 28;
/// How many encoded bytes of entries the sender puts in one offer or
/// offer_part frame: well inside a frame (16 MiB), and small enough that the
/// receiver checks the first part while later ones are still on the wire.
constexpr size_t kOfferPartBytes = 1u << 20;
/// Ranges one accept may list: 2^18 × at most 49 bytes stays well inside a
/// frame (16 MiB). A receiver holding more lists the first ones; the sender
/// sends the rest again.
constexpr size_t kMaxHeldRanges = 1u << 18;
/// Paths an accept lists of what --delete removes (or would, --dry-run): the
/// count is exact, the list stops here (a frame's room for names).
constexpr size_t kMaxListedExtraneous = 1024;
/// Data ranges one sparse file may list (`braid send -S`): a file with more
/// is sent as plain data. 4096 × 16 bytes per file; holes this fragmented
/// save little anyway.
constexpr size_t kMaxDataRanges = 4096;
/// Extended attributes of one entry (-X, -A) and their sizes: Linux's own
/// limits (XATTR_NAME_MAX, XATTR_SIZE_MAX); a file with more is refused by
/// the sender's scan before it is offered. The offer's frame bounds the sum.
constexpr size_t kMaxXattrs = 1024;
constexpr size_t kMaxXattrNameBytes = 255;
constexpr size_t kMaxXattrValueBytes = 65536;
/// User and group names (-o, -g): longer than any system's (LOGIN_NAME_MAX is 256).
constexpr size_t kMaxOwnerNameBytes = 256;

enum class HashAlgo : uint8_t { xxh3_128 = 1, sha256 = 2 };
const char* hash_algo_name(HashAlgo a);

/// A piece or root hash: XXH3-128 (16 bytes) or SHA-256 (32 bytes).
struct Digest {
  std::array<uint8_t, 32> bytes{};
  uint8_t size = 0;
  bool operator==(const Digest& o) const = default;
  std::string hex() const;
};

struct LaneJoin {
  static constexpr FrameType kType = FrameType::lane_join;
  uint32_t version = kProtocolVersion;
  uint32_t lane_id = 0;
};

struct LaneWelcome {
  static constexpr FrameType kType = FrameType::lane_welcome;
  uint32_t lane_id = 0;
};

/// "ADDR:PORT" strings, IPv6 in brackets: "[::1]:7878".
struct Addresses {
  static constexpr FrameType kType = FrameType::addresses;
  std::vector<std::string> endpoints;
  /// The receiver's protocol (since 8; 0: it did not say — protocol
  /// kLastSilentProtocol or older). On the wire it is one more string after
  /// the endpoints, "braid-protocol=N" (kProtocolToken), which no address
  /// parses as: a sender of protocol 7 or older skips it like any address it
  /// cannot use, so adding it breaks no older sender.
  uint32_t protocol = 0;
  bool operator==(const Addresses&) const = default;
};
constexpr std::string_view kProtocolToken = "braid-protocol=";

enum class EntryKind : uint8_t { file = 1, directory = 2, symlink = 3 };

/// A range of a sparse file that holds data (`braid send -S`); the rest of
/// the file is holes, which read as zeros.
struct DataRange {
  uint64_t offset = 0;
  uint64_t length = 0;  // > 0
  bool operator==(const DataRange&) const = default;
};

/// Who owns an entry (-o) or which group it belongs to (-g): the sender's
/// numeric id and, unless --numeric-ids, its name there (empty: none, or
/// not sent). The receiver maps a name it knows to its own id, else uses the id.
struct OwnerId {
  uint32_t id = 0;
  std::string name;
  bool operator==(const OwnerId&) const = default;
};

/// One extended attribute: its full name ("user.comment",
/// "system.posix_acl_access") and its value, raw bytes.
struct Xattr {
  std::string name;
  std::string value;
  bool operator==(const Xattr&) const = default;
};

/// An entry's extended attributes (-X) and POSIX ACLs (-A; the kernel's
/// system.posix_acl_access / system.posix_acl_default values, so no ACL
/// library is needed on either end). `with_xattrs` / `with_acls` say which
/// classes the list is complete for: the receiver makes that class on its
/// entry exactly the list (removing what else it finds of that class), and
/// leaves the other class alone. Names sorted, distinct; an xattr name is
/// user.*, trusted.* or security.*; an ACL name one of the two above (the
/// default ACL on directories only).
struct XattrList {
  bool with_xattrs = false;
  bool with_acls = false;
  std::vector<Xattr> items;
  bool operator==(const XattrList&) const = default;
};
/// Which class an xattr name belongs to: 'x' (-X), 'a' (-A) or 0 (neither:
/// not sent, and refused in an offer).
char xattr_class(std::string_view name);

/// An optional value kept on the heap, with std::optional's interface: 8
/// bytes in its entry while empty. std::optional keeps the value inline: a
/// manifest entry paid ~170 bytes for an owner, a group, xattrs and data
/// ranges that a plain file does not have, on each end, per entry (a
/// million entries: ~0.2 GB each). Copies copy the value.
template <class T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}
  Boxed(T v) : p_(std::make_unique<T>(std::move(v))) {}
  Boxed(const std::optional<T>& o) : p_(o ? std::make_unique<T>(*o) : nullptr) {}
  Boxed(std::optional<T>&& o) : p_(o ? std::make_unique<T>(std::move(*o)) : nullptr) {}
  Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(std::nullopt_t) {
    p_.reset();
    return *this;
  }
  Boxed& operator=(T v) {
    p_ = std::make_unique<T>(std::move(v));
    return *this;
  }
  Boxed& operator=(std::optional<T> o) {
    p_ = o ? std::make_unique<T>(std::move(*o)) : nullptr;
    return *this;
  }
  explicit operator bool() const { return p_ != nullptr; }
  bool has_value() const { return p_ != nullptr; }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  T& value() { return *p_; }
  const T& value() const { return *p_; }
  void reset() { p_.reset(); }
  template <class... A>
  T& emplace(A&&... a) {
    p_ = std::make_unique<T>(std::forward<A>(a)...);
    return *p_;
  }
  /// A copy as std::optional (for calls that take one).
  std::optional<T> optional() const { return p_ ? std::optional<T>(*p_) : std::nullopt; }
  bool operator==(const Boxed& o) const { return p_ ? (o.p_ && *p_ == *o.p_) : !o.p_; }
  bool operator==(std::nullopt_t) const { return !p_; }

 private:
  std::unique_ptr<T> p_;
};

/// A symlink's target, kept on the heap: 8 bytes in an entry that is no
/// symlink, where a std::string took 32 (issue 18, memory per manifest
/// entry). Empty and absent are one value; reads as a std::string.
class LinkTarget {
 public:
  LinkTarget() = default;
  LinkTarget(std::string s) {
    if (!s.empty()) p_ = std::move(s);
  }
  LinkTarget(const char* s) : LinkTarget(std::string(s)) {}
  const std::string& str() const {
    static const std::string none;
    return p_ ? *p_ : none;
  }
  operator const std::string&() const { return str(); }
  const char* c_str() const { return str().c_str(); }
  size_t size() const { return str().size(); }
  bool empty() const { return !p_; }
  bool operator==(const LinkTarget& o) const { return str() == o.str(); }

 private:
  Boxed<std::string> p_;
};

/// One item of a transfer. Regular files are laid end to end, in manifest
/// order, to form the transfer's byte space (directories and links take none).
struct ManifestEntry {
  EntryKind kind = EntryKind::file;
  std::string path;  // relative, '/'-separated, raw bytes; checked by the receiver
  uint64_t size = 0;
  uint32_t mode = 0644;  // permission bits only
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
  LinkTarget link_target;  // symlinks only, raw bytes, never followed
  /// Files only, sparse files sent with -S: the ranges that hold data
  /// (sorted, disjoint, not adjacent, inside size, at most kMaxDataRanges);
  /// everything else is a hole — not sent, not written, left a hole on the
  /// receiver. nullopt: the whole file is data.
  Boxed<std::vector<DataRange>> data{};
  /// Files only, `braid send -H`: this name is another hard link to the
  /// file of entry N (an earlier file entry that is no link itself). Such an
  /// entry has size 0 and no data ranges: it takes no bytes, the receiver
  /// links it to entry N's file once that is in place.
  std::optional<uint32_t> hard_link_to{};
  /// -o / -g: the entry's owner and group on the sender (nullopt: not sent;
  /// the receiver's file belongs to whoever runs it). Not on hard links.
  Boxed<OwnerId> owner{};
  Boxed<OwnerId> group{};
  /// -X / -A, files and directories: see XattrList. Not on hard links.
  Boxed<XattrList> xattrs{};
  bool operator==(const ManifestEntry&) const = default;
  /// Bytes of the file that are data (size less holes).
  uint64_t data_bytes() const;
};

/// How the offer meets files that exist already at their place on the
/// receiver (`braid send --sync`; rsync's meanings, docs/engine.md "Sync").
/// All false: every file is sent whole and replaces what is there.
/// On the wire: bits 1..6 of the offer's flags byte, in this order (bit 0 is discard).
struct SyncOptions {
  bool sync = false;               // skip files whose size and mtime match; send only changed chunks of the rest
  bool checksum = false;           // compare by chunk hashes even when size and mtime match
  bool update = false;             // skip files newer on the receiver
  bool ignore_existing = false;    // skip every file that exists on the receiver
  bool delete_extraneous = false;  // remove what the offered directories hold and the offer does not name
  bool dry_run = false;            // decide and tell; write, remove and send nothing
  /// rsync's --backup with --suffix / --backup-dir (braid's --backup-suffix,
  /// --backup-dir; protocol 8): what a transfer replaces and --delete
  /// removes is kept, as NAME + backup_suffix beside it, or under
  /// backup_dir (relative to the target, the entry's path below it, plus
  /// backup_suffix). Both empty: no backup. The suffix holds no '/' and no
  /// NUL, at most kMaxBackupSuffixBytes; the directory is a relative path
  /// the receiver checks like an offered one. On the wire: after the entry
  /// details, only when a backup is asked.
  std::string backup_suffix{};
  std::string backup_dir{};
  bool backup() const { return !backup_suffix.empty() || !backup_dir.empty(); }
  bool operator==(const SyncOptions&) const = default;
};
constexpr size_t kMaxBackupSuffixBytes = 255;

/// decode refuses an offer whose file sizes add up past 2^64 - 1, so
/// total_bytes() never wraps.
struct Offer {
  static constexpr FrameType kType = FrameType::offer;
  uint32_t transfer_id = 0;
  HashAlgo hash = HashAlgo::xxh3_128;
  uint64_t chunk_size = 0;
  std::vector<ManifestEntry> entries;
  /// The receiver verifies and acks every piece and writes nothing: the
  /// bytes only measure the paths (`braid probe`). Its entries name no file.
  bool discard = false;
  SyncOptions sync;
  /// The entries are the first part of the offer: offer_part frames with
  /// the rest follow on the same lane (bit 7 of the flags byte).
  bool continued = false;
  /// Protocol 9: the sender takes accept_part answers to this continued
  /// offer and sends pieces of the accepted entries before its last part.
  /// On the wire: an options byte (bit 0) after the backup options, which
  /// are then always there (empty when no backup is asked).
  bool early_answers = false;
  /// Protocol 10, with early_answers only: the entries come in path order
  /// (the order of their paths' components, each compared by bytes: every
  /// directory's entries right after it, by name) and none is a hard link.
  /// Bit 1 of the options byte.
  bool ordered = false;
  /// Protocol 11, a sync's offer: its sender takes the receiver's verdicts
  /// in several frames (AcceptFiles ahead of the accept). Bit 2 of the
  /// options byte, which such an offer then has; said only to a receiver
  /// that said 11.
  bool verdicts_apart = false;
  /// Not encoded: decode says 3 for an offer that ends after its entries
  /// (a sender of protocol 3, before sync) and 4 for one that ends after
  /// its flags byte (before entry details), so the receiver can refuse it
  /// with a reason that sender understands.
  uint32_t version = kProtocolVersion;
  uint64_t total_bytes() const;
  /// total_bytes() less the sparse files' holes: what the receiver writes.
  uint64_t data_bytes() const;
};

/// `offer` without its entries: a big tree's entries take hundreds of MB,
/// and what is kept or hashed beside them needs only the fields.
Offer offer_fields(const Offer& offer);

/// More entries of an offer that is `continued`: they are entries
/// first_entry, first_entry + 1, … of the whole offer. Parts come in order on
/// one lane; a part sent again (its lane died) repeats the same entries. A
/// hard link may name any earlier entry of the whole offer (checked when the
/// parts are put together: append_offer_part).
struct OfferPart {
  static constexpr FrameType kType = FrameType::offer_part;
  uint32_t transfer_id = 0;
  uint32_t first_entry = 0;
  bool last = false;
  std::vector<ManifestEntry> entries;
  bool operator==(const OfferPart&) const = default;
};

/// Cuts an offer into an offer frame and the parts that follow it, each
/// holding entries of at most about `part_bytes` encoded (at least one
/// entry each). An offer that fits is returned whole with no parts.
struct SplitOffer {
  Offer head;
  std::vector<OfferPart> parts;
};
SplitOffer split_offer(const Offer& offer, size_t part_bytes = kOfferPartBytes);
/// The same cut without the copies, for a sender that makes each frame as
/// it sends it: frame k holds entries [cuts[k], cuts[k + 1]); frame 0 is the
/// offer itself (offer_head), frames 1 … cuts.size() - 2 its parts (offer_part).
std::vector<size_t> offer_cuts(const Offer& offer, size_t part_bytes = kOfferPartBytes);
Offer offer_head(const Offer& offer, const std::vector<size_t>& cuts);
OfferPart offer_part(const Offer& offer, const std::vector<size_t>& cuts, size_t k);
/// Encoded bytes of one entry in an offer or offer_part frame (what
/// offer_cuts measures against part_bytes).
size_t offer_entry_bytes(const ManifestEntry& e);
/// The same over entries held apart from the offer (`fields`: an offer
/// whose own entries are ignored): a sender reading its entries in place.
std::vector<size_t> offer_cuts(std::span<const ManifestEntry> entries, size_t part_bytes = kOfferPartBytes);
Offer offer_head(const Offer& fields, std::span<const ManifestEntry> entries, const std::vector<size_t>& cuts);
OfferPart offer_part(uint32_t transfer_id, std::span<const ManifestEntry> entries, const std::vector<size_t>& cuts,
                     size_t k);

/// The receiver puts a continued offer together: appends `part` to
/// `offer`'s entries. Returns an empty string when it did (or when it is a
/// part already appended, sent again: nothing changes), else why the part
/// is refused (a gap, another transfer, too many entries, sizes that wrap,
/// a hard link to an entry that is no file). `complete` is set when `part`
/// was the last.
std::string append_offer_part(Offer& offer, const OfferPart& part, bool& complete);
/// The same, moving the part's entries in (the const one copies the part first).
std::string append_offer_part(Offer& offer, OfferPart&& part, bool& complete);

/// A byte range of the transfer the receiver verified, wrote and made
/// durable in an earlier, interrupted run of the same offer, with the hash
/// it verified (the offer's algorithm). The sender checks it against its
/// own bytes before it counts it as delivered.
struct HeldRange {
  uint64_t offset = 0;
  uint64_t length = 0;  // > 0
  Digest hash;
  bool operator==(const HeldRange&) const = default;
};

/// What a sync found at a file's place on the receiver. `unchanged`,
/// `newer_here` and `exists_here` keep the receiver's file as it is: none of
/// its bytes is sent. `older_here`: the receiver has another version, and
/// its chunks' hashes are among the held ranges (only the differing chunks
/// are sent). A file with no verdict is new there: sent whole.
enum class FileVerdict : uint8_t { unchanged = 1, newer_here = 2, exists_here = 3, older_here = 4 };
const char* file_verdict_name(FileVerdict v);

struct FileDecision {
  uint32_t entry = 0;  // index into the offer's entries (a regular file)
  FileVerdict verdict = FileVerdict::unchanged;
  bool operator==(const FileDecision&) const = default;
};

struct Accept {
  static constexpr FrameType kType = FrameType::accept;
  uint32_t transfer_id = 0;
  std::vector<HeldRange> held;  // sorted by offset, disjoint (the sender checks)
  /// Sync only: a verdict per file that exists on the receiver, by entry,
  /// strictly increasing (the sender checks them against its offer).
  std::vector<FileDecision> files{};
  /// Sync with delete: how many paths under the offered directories the
  /// offer does not name (removed once the transfer verified), and the
  /// first kMaxListedExtraneous of them.
  uint32_t extraneous_count = 0;
  std::vector<std::string> extraneous{};
};

/// Protocol 11: verdicts of a sync's accept that come before it, in order
/// (each frame's entries after the last one's, the accept's after all of
/// them), when there are more than one accept may list. Each carries at
/// least one and at most kMaxManifestEntries.
struct AcceptFiles {
  static constexpr FrameType kType = FrameType::accept_files;
  uint32_t transfer_id = 0;
  std::vector<FileDecision> files;
  bool operator==(const AcceptFiles&) const = default;
};

/// Protocol 9, to an offer with early_answers: the receiver checked the
/// offer's first `entries` entries against its target (paths, space so far)
/// and made room for them; pieces of those entries' bytes may come now. Each
/// says more entries than the one before; the accept after the last part
/// (with no held ranges and no verdicts: a transfer that resumes or syncs
/// is not answered early) closes the offer, a refuse or a result ends it.
struct AcceptPart {
  static constexpr FrameType kType = FrameType::accept_part;
  uint32_t transfer_id = 0;
  uint32_t entries = 0;  // >= 1
  bool operator==(const AcceptPart&) const = default;
};

/// busy: the same transfer is being received by another braid session.
enum class RefuseReason : uint8_t {
  declined = 1,
  bad_path = 2,
  not_writable = 3,
  no_space = 4,
  bad_offer = 5,
  busy = 6
};
const char* refuse_reason_name(RefuseReason r);

struct Refuse {
  static constexpr FrameType kType = FrameType::refuse;
  uint32_t transfer_id = 0;
  RefuseReason reason = RefuseReason::declined;
  std::string message;
};

/// The fixed header at the start of every piece_data payload; the piece's
/// bytes follow it. A piece travels as consecutive frames on one lane; the
/// last one carries the hash of exactly the piece's bytes (the sender hashes
/// while it reads, so the hash is known only at the end).
struct PieceHeader {
  static constexpr FrameType kType = FrameType::piece_data;
  static constexpr size_t kSize = 72;
  static constexpr uint8_t kLast = 1;
  /// The frame's data is one zstd frame (engine/compress/frame_codec.hpp)
  /// that decompresses to the file bytes at data_offset; its length is in
  /// the zstd frame, so on such a frame the receiver checks the piece's end
  /// after decompressing. The hash is over the file bytes, as always.
  static constexpr uint8_t kCompressed = 2;
  uint32_t transfer_id = 0;
  uint32_t piece = 0;
  uint32_t chunk = 0;
  uint8_t flags = 0;
  uint64_t piece_offset = 0;  // the piece's first byte in the transfer
  uint64_t piece_length = 0;
  uint64_t data_offset = 0;   // this frame's first byte in the transfer
  Digest hash;                // valid when flags & kLast
  bool last() const { return flags & kLast; }
  bool compressed() const { return flags & kCompressed; }
};

struct PieceAbort {
  static constexpr FrameType kType = FrameType::piece_abort;
  uint32_t transfer_id = 0;
  uint32_t piece = 0;
};

enum class AckStatus : uint8_t { ok = 0, hash_mismatch = 1, write_failed = 2 };

struct Ack {
  static constexpr FrameType kType = FrameType::ack;
  uint32_t transfer_id = 0;
  uint32_t piece = 0;
  uint64_t recv_duration_ns = 0;  // receiver's time from the piece's first byte to its last
  AckStatus status = AckStatus::ok;
};

struct LaneClosed {
  static constexpr FrameType kType = FrameType::lane_closed;
  uint32_t lane_id = 0;
  std::string reason;
};

struct Done {
  static constexpr FrameType kType = FrameType::done;
  uint32_t transfer_id = 0;
  Digest root;
};

enum class ResultStatus : uint8_t { verified = 0, root_mismatch = 1, incomplete = 2, write_failed = 3, no_space = 4 };
const char* result_status_name(ResultStatus s);

struct TransferResult {
  static constexpr FrameType kType = FrameType::result;
  uint32_t transfer_id = 0;
  ResultStatus status = ResultStatus::verified;
  std::string message;
};

struct ErrorMessage {
  static constexpr FrameType kType = FrameType::error;
  uint8_t code = 0;
  std::string message;
};

/// No after_transfer: the session ends now (every lane closes). With it
/// (protocol 8; sent right behind that transfer's done): the session ends
/// once the receiver has sent its verdict on the transfer — it closes its
/// lanes right behind the result, so the sender has nothing left to wait
/// for — and at once if the verdict went already.
struct Bye {
  static constexpr FrameType kType = FrameType::bye;
  std::optional<uint32_t> after_transfer{};
};

/// The sender stops transfer `transfer_id` (a probe phase is over, the user
/// dropped it): the receiver abandons it as if its session had ended —
/// what it verified stays for a later run — and the session goes on.
struct Cancel {
  static constexpr FrameType kType = FrameType::cancel;
  uint32_t transfer_id = 0;
  std::string reason;
};

/// A UDP lane wanted: the receiver binds a UDP socket on `address`'s IP
/// (one it advertised; the port is ignored) and answers udp_ready.
struct UdpOpen {
  static constexpr FrameType kType = FrameType::udp_open;
  uint32_t lane_id = 0;
  std::string address;
};

/// The receiver's UDP socket for a lane ("ADDR:PORT"), or empty and why not.
struct UdpReady {
  static constexpr FrameType kType = FrameType::udp_ready;
  uint32_t lane_id = 0;
  std::string address;
  std::string error;
};

/// A piece about to travel on UDP lane `lane_id`: the sender read and hashed
/// it whole before handing it to the lane, so the hash comes first.
struct UdpPiece {
  static constexpr FrameType kType = FrameType::udp_piece;
  uint32_t lane_id = 0;
  uint32_t transfer_id = 0;
  uint32_t piece = 0;
  uint32_t chunk = 0;
  uint64_t piece_offset = 0;
  uint64_t piece_length = 0;
  Digest hash;
};

/// An ack for a piece that arrived on lane `lane_id` (a UDP lane, which has
/// no frames of its own to carry it).
struct LaneAck {
  static constexpr FrameType kType = FrameType::lane_ack;
  uint32_t lane_id = 0;
  Ack ack;
};

// ---- encode: appends the payload to `out` -----------------------------------
void encode(const LaneJoin& m, std::vector<uint8_t>& out);
void encode(const LaneWelcome& m, std::vector<uint8_t>& out);
void encode(const Addresses& m, std::vector<uint8_t>& out);
void encode(const Offer& m, std::vector<uint8_t>& out);
void encode(const Accept& m, std::vector<uint8_t>& out);
void encode(const Refuse& m, std::vector<uint8_t>& out);
void encode(const PieceAbort& m, std::vector<uint8_t>& out);
void encode(const Ack& m, std::vector<uint8_t>& out);
void encode(const LaneClosed& m, std::vector<uint8_t>& out);
void encode(const Done& m, std::vector<uint8_t>& out);
void encode(const TransferResult& m, std::vector<uint8_t>& out);
void encode(const ErrorMessage& m, std::vector<uint8_t>& out);
void encode(const Bye& m, std::vector<uint8_t>& out);
void encode(const Cancel& m, std::vector<uint8_t>& out);
void encode(const UdpOpen& m, std::vector<uint8_t>& out);
void encode(const UdpReady& m, std::vector<uint8_t>& out);
void encode(const UdpPiece& m, std::vector<uint8_t>& out);
void encode(const LaneAck& m, std::vector<uint8_t>& out);
void encode(const OfferPart& m, std::vector<uint8_t>& out);
/// One entry as an offer part of that entry alone encodes it (its fields,
/// then its details), appended to `out`: self-delimiting, so a hash over
/// entries one after another (files::RunningKey) tells any two lists apart.
void encode_entry(const ManifestEntry& e, std::vector<uint8_t>& out);
void encode(const AcceptPart& m, std::vector<uint8_t>& out);
void encode(const AcceptFiles& m, std::vector<uint8_t>& out);
/// Takes an encoding's bytes piece by piece, in order.
using ByteSink = std::function<void(std::span<const uint8_t>)>;
/// encode(m) in pieces: `sink` gets the same bytes encode appends, in order,
/// some 64 KiB at a time, so a caller that only hashes them (transfer_key)
/// never holds the whole encoding — a second copy of a big tree's entries.
void encode_streamed(const Offer& m, const ByteSink& sink);
/// The same for an offer of `fields`' fields with `entries` (fields.entries
/// are not read): an offer with a field changed, without a copy of its entries.
void encode_streamed(const Offer& fields, std::span<const ManifestEntry> entries, const ByteSink& sink);
/// Writes exactly PieceHeader::kSize bytes (in place, in front of the data).
void encode_piece_header(const PieceHeader& h, std::span<uint8_t, PieceHeader::kSize> out);

// ---- decode: false if the payload is malformed (trailing bytes included) ----
bool decode(std::span<const uint8_t> in, LaneJoin& m);
bool decode(std::span<const uint8_t> in, LaneWelcome& m);
bool decode(std::span<const uint8_t> in, Addresses& m);
bool decode(std::span<const uint8_t> in, Offer& m);
bool decode(std::span<const uint8_t> in, Accept& m);
bool decode(std::span<const uint8_t> in, Refuse& m);
bool decode(std::span<const uint8_t> in, PieceAbort& m);
bool decode(std::span<const uint8_t> in, Ack& m);
bool decode(std::span<const uint8_t> in, LaneClosed& m);
bool decode(std::span<const uint8_t> in, Done& m);
bool decode(std::span<const uint8_t> in, TransferResult& m);
bool decode(std::span<const uint8_t> in, ErrorMessage& m);
bool decode(std::span<const uint8_t> in, Bye& m);
bool decode(std::span<const uint8_t> in, Cancel& m);
bool decode(std::span<const uint8_t> in, UdpOpen& m);
bool decode(std::span<const uint8_t> in, UdpReady& m);
bool decode(std::span<const uint8_t> in, UdpPiece& m);
bool decode(std::span<const uint8_t> in, LaneAck& m);
bool decode(std::span<const uint8_t> in, OfferPart& m);
bool decode(std::span<const uint8_t> in, AcceptPart& m);
bool decode(std::span<const uint8_t> in, AcceptFiles& m);
/// Decodes the header at the start of a piece_data payload and checks it is
/// self-consistent (data inside the piece, a hash of the right size on the
/// last frame). `data_length` is the payload size minus the header.
bool decode_piece_header(std::span<const uint8_t> payload, PieceHeader& h, size_t& data_length);
/// The same for a header whose frame's data lies elsewhere (opened straight
/// into a piece buffer): `header` holds at least the header's bytes and the
/// frame carries `data_length` bytes of data after it.
bool decode_piece_header(std::span<const uint8_t> header, size_t data_length, PieceHeader& h);

template <class M>
std::vector<uint8_t> encode_message(const M& m) {
  std::vector<uint8_t> out;
  encode(m, out);
  return out;
}

}  // namespace braid::wire
