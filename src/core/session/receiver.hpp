// The receiving side of a braid session as a pure state machine, the
// sender's counterpart (core/session/sender.hpp) and driven the same way:
// handle_* with the current time in, poll_action() out, poll_timeout() for
// the next deadline. No sockets, files, threads or clocks: what needs the
// file system (checking an offer's paths, the disk, the resume journal,
// asking the user; putting the files in place) goes out as an action and
// comes back as an event.
//
// What it decides: which lanes join (the session's lane cap) and when one
// is closed, the answer to each offer (after the engine prepared it), which
// verified pieces count (the first copy of each), the acks, done (every
// piece there and the root hash right) and the result, what an unfinished
// transfer leaves for resume when the session ends, and the UDP lanes'
// opening. A request the sender repeats (its lane died before our answer)
// gets the same answer again. A goodbye announced with done (wire::Bye's
// after_transfer) ends the session right behind that transfer's verdict:
// the result goes on every lane that carries messages, each lane closing
// behind it.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/session/lane_traits.hpp"
#include "core/session/messages.hpp"
#include "core/session/sender.hpp"
#include "core/session/sync.hpp"
#include "core/wire/entry_parts.hpp"
#include "core/units.hpp"

namespace braid::session {

struct ReceiverConfig {
  /// Most lanes (of every kind) open at once in one session: each may hold a
  /// chunk-sized piece buffer, so a peer cannot make us hold more.
  size_t max_lanes = 64;
  /// Where further lanes may connect (sent on the bootstrap lane first).
  std::vector<std::string> advertised;
  /// Most connections that named this session and have not joined yet: each
  /// holds a reader until its lane_join is read. Above any sender's burst of
  /// lanes (its --max-lanes is at most 256).
  size_t max_joining = 256;
  /// After done, how long the transfer may go without a piece verified
  /// before it is incomplete: done comes as soon as the sender knows every
  /// piece's hash (protocol 8), with its last pieces still on their way.
  Duration done_wait = Duration::seconds(30);
  /// How long the session goes on with lanes open (UDP lanes) but none that
  /// carries messages: the sender opens such a lane again meanwhile
  /// (SenderConfig::message_lane_grace). Zero: it ends at once.
  Duration message_lane_grace = Duration::seconds(10);
  /// The protocol this receiver says in its addresses (wire::Addresses::protocol;
  /// tests fake an older one), and the newest its lanes' joins may say: an
  /// older braid refuses a join newer than itself.
  uint32_t protocol = wire::kProtocolVersion;
  /// A sync's verdicts one accept lists; the ones before go ahead of it in
  /// accept_files frames of as many (protocol 11). The wire's limit; a test
  /// makes it small.
  size_t verdicts_per_accept = wire::kMaxManifestEntries;
  /// The engine prepares an offer part by part (PrepareOfferPart): a sender
  /// that asks (protocol 9, wire::Offer::early_answers) gets each part
  /// answered as it comes (wire::AcceptPart) and sends pieces of those
  /// entries before its last part. Off: every offer is prepared whole after
  /// its last part, as in protocol 8.
  bool early_answers = false;
  RootHashFn root_hash;
};

// ---- actions ------------------------------------------------------------------

struct RecvSendMessage {
  LaneNo lane = 0;
  ToSender msg;
};
struct RecvCloseLane {
  LaneNo lane = 0;
  std::string reason;
  /// The session ended behind its verdict (the goodbye came with done):
  /// stop writing, but read on until the sender closes the lane (for a
  /// short while): closing with its last bytes unread would reset the
  /// connection, which can take the verdict still on its way with it.
  bool drain = false;
};
/// Check the offer against the target (paths, space, a running transfer of
/// the same files), load what an earlier run left (only ranges re-verified
/// from disk count), ask the user if needed; answer with handle_offer_prepared.
/// The offer is the machine's own, shared and never changed again: a
/// million entries take ~0.3 GB, so the engine keeps this pointer (its
/// receive tree reads the entries in place) instead of a copy.
struct PrepareOffer {
  std::shared_ptr<const wire::Offer> offer;
};
/// Protocol 9, an offer whose sender asked for early answers (and
/// ReceiverConfig::early_answers): check entries [first, first +
/// entries.size()) against the target — their paths, the space they need
/// on top of the parts before them — and make room for them, so their
/// pieces can be written; answer with handle_part_prepared (accepted: their
/// AcceptPart goes), handle_part_declined (this offer is answered whole
/// after its last part, as in protocol 8: it needs a person's yes, or an
/// earlier run left some of it here; only for the first part) or a refusal
/// through handle_offer_prepared (what was made stays for a later run, as
/// an abandoned transfer's). Parts are asked one at a time, in order, as
/// they arrive (several parts that came meanwhile as one). With `whole`
/// set these are the offer's last entries and the answer is
/// handle_offer_prepared's accept that closes the offer (no held ranges,
/// no verdicts: such an offer has neither).
struct PrepareOfferPart {
  uint32_t transfer = 0;
  /// The index of the first part's first entry in the whole offer.
  size_t first = 0;
  /// The entries that came since the last ask, as the parts they came in:
  /// shared with the machine and never changed (no copy; it appends new
  /// parts meanwhile, on another thread's call, without moving these).
  std::vector<wire::EntryParts::Part> parts;
  /// The head: the offer's fields (hash, chunk size, flags) and no entries.
  std::optional<wire::Offer> head;
  /// With the last entries: the offer's fields (no entries: they are the
  /// parts'), shared and never changed again.
  std::shared_ptr<const wire::Offer> whole;
};
/// Every byte is verified and the root hash matches: sync and put the files
/// in place; answer with handle_finalized.
struct FinalizeTransfer {
  uint32_t transfer = 0;
  /// The held ranges that still count (none was sent again over them):
  /// those a sync reused from the receiver's older versions of files are
  /// copied from there into the temporary files now.
  std::vector<PieceRecord> held;
};
/// The transfer failed or the session ended before it finished: keep the
/// temporary files and the journal for a later run (nothing under a final name).
struct AbandonTransfer {
  uint32_t transfer = 0;
  std::string reason;
  /// The verdict sent to the sender; none when the session ended first.
  std::optional<wire::ResultStatus> status;
  /// The sender cancelled it (wire::Cancel): nothing failed here.
  bool cancelled = false;
};
/// Open UDP lane `lane` on `address` (one this receiver advertised: the
/// engine checks); answer with handle_udp_lane_opened.
struct OpenUdpLane {
  LaneNo lane = 0;
  std::string address;
  LaneNo via = 0;  // the lane its udp_open came on (the address must be one of this host's, as seen there)
};
/// A UDP piece's header: the engine's assembly of that lane's bytes needs it.
struct ExpectPiece {
  wire::UdpPiece header;
};
struct SessionEnded {
  int failures = 0;  // transfers that did not verify
  std::string reason;
};
struct RecvNote {
  std::string event;
  LaneNo lane = 0;
  std::string detail;
};

using ReceiverAction = std::variant<RecvSendMessage, RecvCloseLane, PrepareOffer, PrepareOfferPart, FinalizeTransfer,
                                    AbandonTransfer, OpenUdpLane, ExpectPiece, SessionEnded, RecvNote>;

class Receiver {
 public:
  explicit Receiver(ReceiverConfig cfg);

  /// Lane 0 is authenticated: says where further lanes may connect.
  void start(const LaneTraits& lane0, Time now);
  /// A connection that named this session and lane `lane` (its first frame
  /// header authenticated); it becomes a lane once its lane_join arrives.
  /// False if the id is taken (a replayed or duplicate join): refuse it.
  bool handle_lane_connected(LaneNo lane, const LaneTraits& traits, Time now);
  void handle_lane_failed(LaneNo lane, const std::string& reason, Time now);
  void handle_message(LaneNo lane, const ToReceiver& msg, Time now);
  /// The same, taking the message: an offer's and its parts' entries are
  /// moved into the transfer instead of copied (the engine's way; the
  /// const one copies the message first).
  void handle_message(LaneNo lane, ToReceiver&& msg, Time now);
  /// The engine's answer to PrepareOffer: accept (with the held ranges it
  /// re-verified) or refuse.
  void handle_offer_prepared(uint32_t transfer, std::variant<wire::Accept, wire::Refuse> answer, Time now);
  /// The engine's answer to PrepareOfferPart (not `whole`): the part's
  /// entries are checked and room is made for them.
  void handle_part_prepared(uint32_t transfer, Time now);
  /// The engine's answer to the first PrepareOfferPart: this offer is
  /// prepared whole after its last part (PrepareOffer), as in protocol 8.
  void handle_part_declined(uint32_t transfer, Time now);
  /// A piece arrived whole on `lane`, its hash checked out and it was
  /// written (`record`); `recv_duration` from its first byte to its last.
  void handle_piece_verified(LaneNo lane, uint32_t transfer, uint32_t piece, const PieceRecord& record,
                             Duration recv_duration, Time now);
  /// A piece arrived whole and its hash did not match (or it could not be written).
  void handle_piece_rejected(LaneNo lane, uint32_t transfer, uint32_t piece, wire::AckStatus why, Time now);
  /// The engine cannot go on with the transfer (the disk is full, the
  /// journal cannot be written): it fails with `status`, the sender is told.
  void handle_transfer_failed(uint32_t transfer, wire::ResultStatus status, const std::string& message, Time now);
  void handle_finalized(uint32_t transfer, wire::ResultStatus status, const std::string& message, Time now);
  /// The engine's answer to OpenUdpLane: the lane's local address, or why not.
  void handle_udp_lane_opened(LaneNo lane, const std::string& local, const std::string& error, Time now);
  void handle_timeout(Time now);
  /// The same sender (its identity) opened another session: if this one is
  /// waiting for a lane that carries messages, it ends now.
  void handle_peer_returned(Time now);
  /// The process is stopping (a signal): every lane closes with `reason`.
  void close(const std::string& reason, Time now);
  /// This host's addresses changed (an interface or address came or went):
  /// the sender hears the new list and plans its paths again, as MPTCP's
  /// ADD_ADDR / REMOVE_ADDR do. Nothing if the list is the same.
  void advertise(std::vector<std::string> addresses, Time now);

  std::optional<ReceiverAction> poll_action();
  std::optional<Time> poll_timeout() const;

  // ---- queries (the engine's and the reports') ---------------------------------
  /// The piece has a verified copy already: another copy need not be written.
  bool piece_verified(uint32_t transfer, uint32_t piece) const;
  /// Answered part by part: every byte of the transfer before this offset
  /// is verified (its first verified copy written before the engine said
  /// so) or a hole of the accepted entries. The engine lets go of what it
  /// wrote there (files::ReceiveTree::release_written). 0 for another.
  uint64_t verified_prefix(uint32_t transfer) const;
  bool accepted(uint32_t transfer) const;
  /// Accepted, or (protocol 9) some of its parts are: its pieces count.
  bool taking_pieces(uint32_t transfer) const;
  /// The lane's lane_join was taken: piece data may flow on it.
  bool lane_joined(LaneNo lane) const;
  size_t open_lanes() const;
  bool ended() const { return ended_; }
  struct TransferView {
    uint32_t id = 0;
    uint64_t total = 0;
    uint64_t held_bytes = 0;  // from an earlier run, re-verified (or, sync, chunks of an older version here)
    uint64_t kept_bytes = 0;  // sync: files kept as they are here (never sent)
    uint64_t verified_bytes = 0;
    std::map<LaneNo, uint64_t> lane_bytes;
    std::map<LaneNo, uint32_t> lane_pieces;
    std::optional<wire::ResultStatus> result;
    std::optional<wire::Digest> root;  // the sender's, from its done
    bool finished = false;
    bool cancelled = false;  // by the sender (wire::Cancel)
    Time accepted_at = Time::never();  // the first accept: a part's (protocol 9) or the whole offer's
    uint32_t early_entries = 0;        // entries accepted part by part before the whole offer
    Time done_at = Time::never();
  };
  std::optional<TransferView> transfer(uint32_t id) const;

 private:
  struct Lane {
    LaneNo id = 0;
    LaneTraits traits;
    bool joined = false;
    bool open = true;
    std::string close_reason;
  };
  struct Transfer {
    /// Put together part by part while `assembling`; shared with the
    /// engine (PrepareOffer) and never changed once complete. Answered part
    /// by part (`early`): its fields only, the entries are `entries`.
    std::shared_ptr<wire::Offer> offer;
    /// `early` only: the entries so far, as their parts came, shared with
    /// the engine; `parts_out` of them were handed to it.
    wire::EntryParts entries;
    size_t parts_out = 0;
    /// A continued offer whose last part has not come yet: not prepared.
    bool assembling = false;
    /// Answered part by part (protocol 9; PrepareOfferPart): `part_out`
    /// while the engine checks entries [view.early_entries, part_end);
    /// `early_bytes` are the file bytes of the entries accepted so far,
    /// where pieces may land before the whole offer is.
    bool early = false;
    bool part_out = false;
    bool whole_out = false;  // the part out holds the last entries: its answer is the closing accept
    size_t part_end = 0;
    uint64_t early_bytes = 0;
    /// The holes of the entries accepted so far, found as they are
    /// accepted: the machine lets go of its parts once the engine took
    /// them (`entries` keeps their counts), and the records join `held`
    /// with the closing accept.
    std::optional<sync::HoleRecords> holes;
    std::vector<wire::HeldRange> hole_records;
    /// verified_prefix, and the verified ranges beyond it (by offset: their ends).
    uint64_t verified_to = 0;
    std::map<uint64_t, uint64_t> verified_ahead;
    LaneNo asked_on = 0;
    std::optional<std::variant<wire::Accept, wire::Refuse>> answer;
    std::map<uint32_t, PieceRecord> pieces;  // verified, by piece id
    std::vector<PieceRecord> held;            // from an earlier run
    TransferView view;
    std::optional<LaneNo> done_on;
    std::optional<wire::Done> done;
    Time done_deadline = Time::never();
    bool finalizing = false;
    bool failed = false;
    bool cancelled = false;  // wire::Cancel came before the answer
    std::optional<wire::TransferResult> result;
  };

  Lane* find(LaneNo id);
  std::optional<LaneNo> reply_lane(LaneNo preferred) const;
  void reply(LaneNo preferred, ToSender msg);
  /// An offer's answer: a sync's verdicts beyond what one accept may list
  /// go first in accept_files frames (protocol 11).
  void send_answer(LaneNo preferred, const std::variant<wire::Accept, wire::Refuse>& answer);
  size_t verdicts_per_accept() const { return std::max<size_t>(cfg_.verdicts_per_accept, 1); }
  void close_lane(Lane& lane, const std::string& reason, bool announce, Time now);
  size_t counted_lanes() const;
  std::string lane_limit() const;
  void try_finish(Transfer& t, Time now);
  static size_t entry_count(const Transfer& t) { return t.early ? t.entries.size() : t.offer->entries.size(); }
  /// An early-answered offer: asks the engine about the entries that came
  /// since the last part it was asked (the rest, and whole, once complete).
  void ask_part(Transfer& t);
  /// Early parts were accepted and the transfer ends before its whole
  /// offer was: what the engine made stays for a later run.
  void abandon_early(Transfer& t, const std::string& reason, bool cancelled);
  void fail(Transfer& t, wire::ResultStatus status, const std::string& message);
  /// Early: entries [from, to) are accepted (`last`: the offer's last
  /// ones): their holes are found, early_bytes counts their files.
  void accept_entries(Transfer& t, size_t from, size_t to, bool last);
  /// [offset, offset + length) is verified or a hole: verified_prefix moves on.
  static void add_verified(Transfer& t, uint64_t offset, uint64_t length);
  void end_session(const std::string& reason, bool drain = false);
  void push(ReceiverAction a) { actions_.push_back(std::move(a)); }
  /// A joining lane is refused: noted, told why on the lane when `tell`
  /// (it said a join, and its sender waits there for a welcome), closed.
  void refuse_join(Lane& lane, const std::string& why, bool tell);

  ReceiverConfig cfg_;
  std::vector<Lane> lanes_;
  std::map<uint32_t, Transfer> transfers_;
  std::map<LaneNo, LaneNo> udp_asked_on_;  // UDP lane -> the lane its udp_open came on
  /// The sender's goodbye comes with this transfer's verdict (wire::Bye's after_transfer).
  std::optional<uint32_t> bye_after_;
  /// Sends a transfer's verdict: on the lane its done came on; when the
  /// sender said goodbye with that done, on every message lane, and the
  /// session ends behind it.
  void send_result(const Transfer& t);
  bool ended_ = false;
  int failures_ = 0;
  Time no_message_lane_since_ = Time::never();
  std::string end_reason_;
  std::deque<ReceiverAction> actions_;
};

}  // namespace braid::session
