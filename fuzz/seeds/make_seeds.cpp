// Writes the seed corpus of every fuzz target: valid inputs made with braid's
// own encoders (so a seed is something a peer or braid itself really
// produces), plus edge cases each decoder must refuse or survive.
// Deterministic: the same sources give the same bytes, so the committed
// corpus changes only when an encoding does.
//
//   fuzz_make_seeds OUT_DIR     writes OUT_DIR/<target>/<name>
// (fuzz/make-corpus runs it into fuzz/corpus/.)
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/transport/range_set.hpp"
#include "core/transport/wire.hpp"
#include "engine/files/resume_journal.hpp"
#include "engine/security/fingerprint.h"
#include "engine/security/frame_crypto.h"
#include "engine/transfer/code_text.hpp"
#include "engine/udp/datagram_crypto.hpp"
#include "core/wire/messages.hpp"
#include "fixed_keys.hpp"
#include "seeds/mdns_seeds.hpp"

using namespace braid;
namespace fs = std::filesystem;
using Bytes_ = std::vector<uint8_t>;

namespace {

fs::path g_out;

void put(const std::string& target, const std::string& name, const Bytes_& bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

void put_text(const std::string& target, const std::string& name, const std::string& text) {
  put(target, name, Bytes_(text.begin(), text.end()));
}

Bytes_ prefixed(uint8_t first, const Bytes_& rest) {
  Bytes_ b{first};
  b.insert(b.end(), rest.begin(), rest.end());
  return b;
}

wire::Digest digest(uint8_t size, uint8_t fill) {
  wire::Digest d;
  d.size = size;
  for (size_t i = 0; i < size; ++i) d.bytes[i] = static_cast<uint8_t>(fill + i);
  return d;
}

Bytes_ piece_payload(const wire::PieceHeader& h, size_t data) {
  Bytes_ b(wire::PieceHeader::kSize + data, 0xab);
  wire::encode_piece_header(h, std::span<uint8_t, wire::PieceHeader::kSize>(b.data(), wire::PieceHeader::kSize));
  return b;
}

wire::Offer sample_offer() {
  using wire::EntryKind;
  wire::Offer o;
  o.transfer_id = 42;
  o.hash = wire::HashAlgo::xxh3_128;
  o.chunk_size = 1 << 20;
  o.entries = {{EntryKind::directory, "photos", 0, 0755, 1700000000, 0, ""},
               {EntryKind::file, "photos/a.jpg", 3000000, 0644, 1700000001, 500, ""},
               {EntryKind::directory, "photos/raw", 0, 0700, 1700000002, 0, ""},
               {EntryKind::file, "photos/raw/b c\nd.cr2", 0, 0600, -5, 999999999, ""},
               {EntryKind::symlink, "photos/latest", 0, 0777, 1700000003, 0, "a.jpg"},
               {EntryKind::file, "notes.txt", 17, 0644, 0, 0, ""}};
  return o;
}

// ---- wire messages -----------------------------------------------------------

// wire_messages picks its decoder by data[0] % 23 + 1 (the frame type).
template <class M>
void message(const std::string& name, const M& m) {
  put("wire_messages", name, prefixed(static_cast<uint8_t>(M::kType) - 1, wire::encode_message(m)));
}

void wire_seeds() {
  using namespace wire;
  message("lane_join", LaneJoin{kProtocolVersion, 3});
  message("lane_welcome", LaneWelcome{3});
  message("addresses", Addresses{{"192.168.1.10:7878", "[fe80::1%eth0]:7878", "10.0.0.1:1"}});
  message("addresses_empty", Addresses{});
  message("addresses_protocol", Addresses{{"192.168.1.10:7878"}, kProtocolVersion});
  message("offer", sample_offer());
  message("accept_held", Accept{42, {HeldRange{0, 1 << 20, digest(16, 1)}, HeldRange{3 << 20, 100, digest(16, 9)}}});
  message("accept_sha256", Accept{42, {HeldRange{1 << 20, 1 << 20, digest(32, 7)}}});
  message("accept_empty", Accept{42, {}});
  message("accept_sync", Accept{42, {HeldRange{0, 1 << 20, digest(16, 1)}},
                                {{1, FileVerdict::older_here}, {3, FileVerdict::unchanged}, {5, FileVerdict::newer_here}},
                                3, {"photos/old.jpg", "photos/gone"}});
  {
    Offer synced = sample_offer();
    synced.sync = SyncOptions{true, true, false, false, true, false};
    message("offer_sync", synced);
    Offer backed = synced;  // protocol 8: the backup options after the entry details
    backed.sync.backup_suffix = "~";
    backed.sync.backup_dir = "old";
    message("offer_backup", backed);
    Offer sparse = sample_offer();  // -S: data ranges of a sparse file, and one all hole
    sparse.entries[1].data = std::vector<DataRange>{{0, 4096}, {1 << 20, 8192}, {2900000, 100000}};
    sparse.entries[5].data = std::vector<DataRange>{};
    message("offer_sparse", sparse);
    Offer linked = sparse;  // -H: an empty file as another name of a sparse one
    linked.entries[3].hard_link_to = 1;
    message("offer_hard_link", linked);
    // Protocol 6: an offer cut in parts (tiny ones, so the sample makes three).
    const wire::SplitOffer split = wire::split_offer(linked, 40);
    message("offer_continued", split.head);
    for (size_t i = 0; i < split.parts.size(); ++i) message("offer_part_" + std::to_string(i), split.parts[i]);
    Offer owned = sample_offer();  // -a -X -A: owners, groups, xattrs and ACLs
    owned.entries[0].owner = OwnerId{1000, "alice"};
    owned.entries[0].group = OwnerId{100, "users"};
    owned.entries[0].xattrs = XattrList{true, true, {{"system.posix_acl_default", std::string("\x02\0\0\0", 4)}}};
    owned.entries[1].owner = OwnerId{4242, ""};
    owned.entries[1].xattrs = XattrList{true, false, {{"trusted.t", "x"}, {"user.comment", "hello"}}};
    owned.entries[4].group = OwnerId{7, "lp"};
    message("offer_owners_xattrs", owned);
  }
  message("refuse", Refuse{42, RefuseReason::busy, "the same transfer is being received elsewhere"});
  message("piece_abort", PieceAbort{42, 9});
  message("ack", Ack{42, 9, 123456789, AckStatus::hash_mismatch});
  message("lane_closed", LaneClosed{2, "forged frame"});
  message("done_xxh3", Done{42, digest(16, 3)});
  message("done_sha256", Done{42, digest(32, 3)});
  message("result", TransferResult{42, ResultStatus::root_mismatch, "root hash differs"});
  message("error", ErrorMessage{7, "protocol error"});
  message("bye", Bye{});
  message("cancel", Cancel{42, "probe phase over"});
  message("accept_part", AcceptPart{42, 1000});
  message("accept_files", AcceptFiles{42, {{0, FileVerdict::unchanged}, {3, FileVerdict::older_here}}});
  message("udp_open", UdpOpen{5, "192.168.1.10:0"});
  message("udp_ready", UdpReady{5, "192.168.1.10:40000", ""});
  message("udp_ready_error", UdpReady{5, "", "cannot bind"});
  message("udp_piece", UdpPiece{5, 42, 9, 9, 9ull << 20, 1 << 20, digest(16, 5)});
  message("lane_ack", LaneAck{5, Ack{42, 9, 1000, AckStatus::ok}});
  PieceHeader h{42, 1, 1, PieceHeader::kLast, 1 << 20, 64, 1 << 20, digest(16, 2)};
  put("wire_messages", "piece_data", prefixed(static_cast<uint8_t>(FrameType::piece_data) - 1, piece_payload(h, 64)));
  put("wire_messages", "piece_header_elsewhere", prefixed(18, piece_payload(h, 64)));
  // Edge cases: empty payloads, and counts far beyond the bytes present.
  for (uint8_t t = 0; t < 19; ++t) put("wire_messages", "empty_" + std::to_string(t + 1), {t});
  put("wire_messages", "addresses_huge_count", {2, 0xff, 0xff, 0xff, 0xff});
  put("wire_messages", "accept_huge_count", {4, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff});
}

void piece_header_seeds() {
  using namespace wire;
  auto put_h = [](const std::string& name, const PieceHeader& h, size_t data) {
    put("piece_header", name, piece_payload(h, data));
  };
  put_h("first", PieceHeader{1, 0, 0, 0, 0, 1 << 20, 0, {}}, 256);
  put_h("middle", PieceHeader{1, 3, 3, 0, 3 << 20, 1 << 20, (3 << 20) + 256, {}}, 256);
  put_h("last_xxh3", PieceHeader{1, 3, 3, PieceHeader::kLast, 3 << 20, 512, (3 << 20) + 256, digest(16, 1)}, 256);
  put_h("last_sha256", PieceHeader{1, 3, 3, PieceHeader::kLast, 0, 100, 0, digest(32, 1)}, 100);
  put_h("empty_piece", PieceHeader{1, 0, 0, PieceHeader::kLast, 7, 0, 7, digest(16, 1)}, 0);
  put_h("near_2_64", PieceHeader{1, 0, 0, PieceHeader::kLast, UINT64_MAX - 10, 10, UINT64_MAX - 4, digest(16, 1)}, 4);
  put("piece_header", "short", Bytes_(71, 0));
}

/// offer_parts: u8 count, then each frame as a u16 length and its bytes.
void offer_parts_seeds() {
  auto put_frames = [](const std::string& name, const std::vector<Bytes_>& frames) {
    Bytes_ b{static_cast<uint8_t>(frames.size() - 1)};
    for (const auto& f : frames) {
      b.push_back(static_cast<uint8_t>(f.size() >> 8));
      b.push_back(static_cast<uint8_t>(f.size()));
      b.insert(b.end(), f.begin(), f.end());
    }
    put("offer_parts", name, b);
  };
  wire::Offer linked = sample_offer();
  linked.entries[1].data = std::vector<wire::DataRange>{{0, 4096}, {1 << 20, 8192}};
  linked.entries[3].hard_link_to = 1;
  for (size_t part_bytes : {size_t{40}, size_t{120}}) {
    const wire::SplitOffer split = wire::split_offer(linked, part_bytes);
    std::vector<Bytes_> frames{wire::encode_message(split.head)};
    for (const auto& p : split.parts) frames.push_back(wire::encode_message(p));
    put_frames("split_" + std::to_string(part_bytes), frames);
    if (frames.size() > 2) {  // the second part twice (its lane died), then the rest
      std::vector<Bytes_> again{frames[0], frames[1], frames[1]};
      again.insert(again.end(), frames.begin() + 2, frames.end());
      put_frames("repeat_" + std::to_string(part_bytes), again);
      std::vector<Bytes_> gap{frames[0], frames[2]};  // a part missing: refused
      put_frames("gap_" + std::to_string(part_bytes), gap);
    }
  }
  put_frames("whole", {wire::encode_message(sample_offer())});
}

void offer_seeds() {
  using wire::EntryKind;
  put("offer", "sample", wire::encode_message(sample_offer()));
  wire::Offer one;
  one.transfer_id = 1;
  one.hash = wire::HashAlgo::sha256;
  one.chunk_size = 64 << 10;
  one.entries = {{EntryKind::file, "big.bin", uint64_t{1} << 40, 0644, 1, 2, ""}};
  put("offer", "one_big_file", wire::encode_message(one));
  wire::Offer bad = one;
  bad.entries = {{EntryKind::file, "../escape", 1, 0644, 0, 0, ""},
                 {EntryKind::file, "/etc/passwd", 1, 0644, 0, 0, ""},
                 {EntryKind::file, "a//b", 1, 0644, 0, 0, ""},
                 {EntryKind::file, "a/./b", 1, 0644, 0, 0, ""},
                 {EntryKind::file, std::string("nul\0byte", 8), 1, 0644, 0, 0, ""},
                 {EntryKind::file, std::string(256, 'n'), 1, 0644, 0, 0, ""},
                 {EntryKind::symlink, "link", 0, 0777, 0, 0, "/etc/passwd"},
                 {EntryKind::file, "esc\x1b[31mred\\", 1, 0644, 0, 0, ""}};
  put("offer", "bad_paths", wire::encode_message(bad));
  wire::Offer big = one;
  big.entries = {{EntryKind::file, "a", uint64_t{1} << 62, 0644, 0, 0, ""},
                 {EntryKind::file, "b", uint64_t{1} << 62, 0644, 0, 0, ""},
                 {EntryKind::file, "c", uint64_t{1} << 61, 0644, 0, 0, ""}};
  put("offer", "huge_files", wire::encode_message(big));
  wire::Offer empty;
  put("offer", "no_entries", wire::encode_message(empty));
}

// ---- sealed frames -------------------------------------------------------------

void frame_seeds() {
  using namespace security;
  auto header = [](const FrameHeader& h) {
    Bytes_ b(kFrameHeaderSize);
    encode_frame_header(h, std::span<uint8_t, kFrameHeaderSize>(b.data(), kFrameHeaderSize));
    return b;
  };
  put("frame_header", "c2s", header(FrameHeader{4, Direction::client_to_server, 100, fuzz::kSessionId, 1, 0}));
  put("frame_header", "s2c_max", header(FrameHeader{9, Direction::server_to_client, kMaxFramePayload, UINT64_MAX, UINT32_MAX, UINT64_MAX}));
  Bytes_ too_long = header(FrameHeader{7, Direction::client_to_server, 0, 1, 1, 1});
  too_long[4] = 0x01;
  too_long[5] = 0x00;
  too_long[6] = 0x00;
  too_long[7] = 0x01;  // 16 MiB + 1
  put("frame_header", "too_long", too_long);

  const auto& keys = fuzz::fixed_lane_keys().for_direction(Direction::client_to_server);
  auto seal = [&](uint8_t type, const Bytes_& payload) {
    auto s = FrameSealer::create(keys, fuzz::kSessionId, fuzz::kLaneId, Direction::client_to_server);
    Bytes_ out(sealed_frame_size(static_cast<uint32_t>(payload.size())));
    if (!s || s.value().seal(type, payload, out) != FrameStatus::ok) std::exit(1);
    return out;
  };
  // Mode 0: frames a peer of the fixed session sends first (counter 0).
  put("frame_open", "raw_offer", prefixed(0, seal(4, wire::encode_message(sample_offer()))));
  put("frame_open", "raw_empty", prefixed(0, seal(14, {})));
  put("frame_open", "raw_piece", prefixed(0, seal(7, piece_payload(wire::PieceHeader{1, 0, 0, 0, 0, 4096, 0, {}}, 200))));
  put("frame_open", "raw_split_head_72", prefixed(3 * 72, seal(7, piece_payload(wire::PieceHeader{1, 0, 0, 0, 0, 4096, 0, {}}, 200))));
  // Mode 1 (tamper) and 2 (sequence): the provider's bytes.
  put("frame_open", "tamper_none", prefixed(1, {7, 0, 10, 0, 0, 2, 'p', 'a', 'y', 'l', 'o', 'a', 'd'}));
  put("frame_open", "tamper_flip", prefixed(1, {7, 1, 10, 1, 0, 20, 0x80, 2, 'p', 'a', 'y', 'l', 'o', 'a', 'd'}));
  put("frame_open", "sequence", prefixed(2, {0, 0, 0, 1, 0, 1, 0, 2, 4, 0, 0, 3, 4, 0, 3, 2, 4, 0x4c, 1, 0, 0, 5}));
}

// ---- UDP packets ----------------------------------------------------------------

Bytes_ udp_packet(transport::PacketKind kind, uint64_t pn, bool with_data) {
  using namespace transport;
  Bytes_ buf(1400);
  ByteWriter w(buf);
  encode_header(w, PacketHeader{kind, fuzz::kLaneId, pn});
  if (kind == PacketKind::feedback) {
    RangeSet rs;
    rs.insert(0, 10);
    rs.insert(13, 13);
    rs.insert(20, 400);
    rs.insert(1000, 1000);
    encode_ack_frame(w, rs, Duration::micros(250), 8);
    encode_max_data_frame(w, braid::Bytes(64 << 20));
  } else {
    encode_ping_frame(w);
    if (with_data) {
      auto room = encode_data_frame(w, DataRange{3, 1200, 100});
      for (size_t i = 0; i < room.size(); ++i) room[i] = static_cast<uint8_t>(i);
    }
  }
  buf.resize(w.written());
  return buf;
}

void udp_seeds() {
  using transport::PacketKind;
  put("udp_packet", "data", udp_packet(PacketKind::data, 1, true));
  put("udp_packet", "feedback", udp_packet(PacketKind::feedback, 2, false));
  Bytes_ padded = udp_packet(PacketKind::data, 3, true);
  padded.resize(1200, 0);  // PADDING to the minimum datagram size
  put("udp_packet", "padded", padded);
  put("udp_packet", "header_only", udp_packet(PacketKind::data, UINT64_MAX, false));
  // An ACK whose ranges would go below zero.
  Bytes_ bad = udp_packet(PacketKind::data, 4, false);
  bad.insert(bad.end(), {0x02, 0x05, 0x00, 0x01, 0x02, 0x00, 0x10});
  put("udp_packet", "ack_below_zero", bad);

  put("range_set", "inserts", {3, 0, 10, 20, 0, 30, 40, 1, 25, 26, 3, 15});
  put("range_set", "high_values", {2, 0, 200, 255, 1, 250, 254, 2, 100, 3, 255, 0, 0, 255});

  const auto& keys = fuzz::fixed_lane_keys().for_direction(security::Direction::client_to_server);
  auto seal = [&](Bytes_ plain) {
    auto s = udp::DatagramSealer::create(keys, fuzz::kSessionId);
    const size_t n = plain.size();
    plain.resize(n + transport::kAeadTagSize);
    if (!s || s.value().seal(plain, n) != security::FrameStatus::ok) std::exit(1);
    return plain;
  };
  put("datagram_open", "raw_data", prefixed(0, seal(udp_packet(PacketKind::data, 1, true))));
  put("datagram_open", "raw_ping", prefixed(0, seal(udp_packet(PacketKind::data, 77, false))));
  put("datagram_open", "raw_feedback_reflected", prefixed(0, seal(udp_packet(PacketKind::feedback, 5, false))));
  put("datagram_open", "tamper", prefixed(1, {0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 1, 0, 13, 0x40, 2, 0x01, 0x03, 0x01, 0x02, 0x03}));
  put("datagram_open", "sequence", prefixed(2, {1, 0, 0, 1, 1, 0, 1, 1, 0xb, 0xb8, 1, 0, 0, 1, 1, 0xb, 0xb8, 0, 1}));
  put("datagram_open", "sequence_low", prefixed(2, {0, 0, 5, 1, 1, 0, 5, 1, 1, 4, 0, 1, 1, 0, 2, 1}));
}

// ---- the resume journal -----------------------------------------------------------

Bytes_ read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void journal_seeds() {
  std::string tmpl = fs::temp_directory_path().string() + "/braid-seeds-XXXXXX";
  if (!mkdtemp(tmpl.data())) std::exit(1);
  const fs::path dir(tmpl);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

  auto journal = [&](const std::string& name, wire::HashAlgo algo, uint8_t key_fill,
                     const std::vector<files::PieceRecord>& held, const std::vector<files::PieceRecord>& revoked,
                     const std::vector<files::PieceRecord>& held_after) {
    files::JournalParams p;
    p.key.bytes.fill(key_fill);
    p.hash = algo;
    p.chunk_size = 1 << 20;
    p.total = 10 << 20;
    {
      auto r = files::ResumeJournal::open(dfd, p);
      auto* j = std::get_if<std::unique_ptr<files::ResumeJournal>>(&r);
      if (!j || (*j)->append_held(held) != 0 || (*j)->append_revoked(revoked) != 0 || (*j)->append_held(held_after) != 0)
        std::exit(1);
    }
    const Bytes_ file = read_all(dir / files::ResumeJournal::file_name(p.key));
    put("resume_journal", name, prefixed(0, file));
    put("resume_journal", name + "_resealed", prefixed(1, file));
    fs::remove(dir / files::ResumeJournal::file_name(p.key));
    return file;
  };
  auto rec = [](uint64_t off, uint64_t len, uint8_t size, uint8_t fill) {
    return files::PieceRecord{off, len, digest(size, fill)};
  };
  journal("header_only", wire::HashAlgo::xxh3_128, 1, {}, {}, {});
  journal("held", wire::HashAlgo::xxh3_128, 2, {rec(0, 1 << 20, 16, 1), rec(1 << 20, 1 << 20, 16, 2)}, {}, {});
  journal("held_revoked", wire::HashAlgo::xxh3_128, 3,
          {rec(0, 1 << 20, 16, 1), rec(1 << 20, 1 << 20, 16, 2), rec(2 << 20, 1 << 20, 16, 3)},
          {rec(1 << 20, 1, 0, 0)}, {rec(1 << 20, 1 << 20, 16, 4)});
  const Bytes_ sha = journal("sha256", wire::HashAlgo::sha256, 4, {rec(9 << 20, 1 << 20, 32, 5)}, {}, {});
  Bytes_ torn = sha;
  torn.resize(torn.size() - 20);  // a record cut short by a crash
  put("resume_journal", "torn", prefixed(0, torn));
  put("resume_journal", "mismatch", prefixed(2, sha));

  ::close(dfd);
  fs::remove_all(dir);
}

// ---- text formats ----------------------------------------------------------------

void text_seeds() {
  std::array<uint8_t, 32> b1{}, b2{};
  for (size_t i = 0; i < 32; ++i) {
    b1[i] = static_cast<uint8_t>(i);
    b2[i] = static_cast<uint8_t>(255 - i);
  }
  const std::string f1 = security::Fingerprint(b1).to_string(), f2 = security::Fingerprint(b2).to_string();
  put_text("known_peers", "two", "# braid known peers: one line per peer, \"NAME FINGERPRINT\".\n"
                                 "# Delete a peer's line to forget it; it must then pair again with a code.\n"
                                 "laptop " + f1 + "\nnas.local " + f2 + "\n");
  put_text("known_peers", "crlf_tabs", "laptop\t" + f1 + "  # the old one\r\n\r\nuser@host:1 " + f2);
  put_text("known_peers", "empty", "");
  put_text("known_peers", "bad_fingerprint", "laptop SHA256:AAAA\n");
  put_text("known_peers", "three_fields", "laptop " + f1 + " extra\n");
  put_text("known_peers", "labels", "vm " + f1 + " paired=2026-12-02T04:31:07Z host=vm\nvm-2 " + f2 +
                                        " paired=2026-12-02T05:00:00Z host=vm  # the second vm\n");

  const auto code = transfer::pairing_code_from_text("seed-1").code;
  if (!code) std::exit(1);
  std::string lower = code->display();
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string mistyped = code->canonical();
  mistyped.back() = mistyped.back() == '0' ? '1' : '0';
  put_text("pairing_code", "display", code->display());
  put_text("pairing_code", "canonical", code->canonical());
  put_text("pairing_code", "lower_spaces", lower + "\n");
  put_text("pairing_code", "mistyped", mistyped);
  put_text("pairing_code", "script_text", "test-1234");
  put_text("pairing_code", "letters_il_o", "ILO0-1234-5678-9ABC-DEFG-HJKM");
  put_text("pairing_code", "words", "4821-chalk-lagoon-tiara-wharf");
  put_text("pairing_code", "words_sloppy", " 4821CHALK. lago  tiar_Wharf\n");
  put_text("pairing_code", "words_typo", "4821-chlak-lagoon-tiara-wharf");

  // netlab_spec picks the parser by data[0] % 7.
  auto spec = [](const std::string& name, uint8_t which, const std::string& text) {
    put("netlab_spec", name, prefixed(which, Bytes_(text.begin(), text.end())));
  };
  spec("link", 0, "W:rate=320Mbit,delay=3ms,loss=1%,queue=2MB");
  spec("link_directions", 0, "U:up.rate=160Mbit,down.rate=16Mbit,up.delay=1ms,jitter=250us,codel,codel.target=5ms,mtu=9000,gso=off,seed=7");
  spec("link_queue_time", 0, "B:rate=1.5Mbit,delay=20ms,queue=50ms");
  spec("event_outage", 1, "at=2s,link=W,outage=3s");
  spec("event_for", 1, "at=1s,link=*,down,for=500ms");
  spec("event_set", 1, "at=3s,link=W,rate=32Mbit,up.loss=2%,queue=50p,codel=on");
  spec("event_latest", 1, "at=9000000000s,link=W,outage=1s");  // near the largest time
  spec("link_longest_delay", 0, "W:delay=9000000000s,queue=9000000000s");
  spec("duration", 2, "1.5s");
  spec("rate", 3, "unlimited");
  spec("probability", 4, "12.5%");
  spec("queue", 5, "1000p");
  spec("size", 6, "64KiB");

  // units_parse picks the parser by data[0] % 3.
  auto unit = [](const std::string& name, uint8_t which, const std::string& text) {
    put("units_parse", name, prefixed(which, Bytes_(text.begin(), text.end())));
  };
  unit("size", 0, "256MiB");
  unit("size_decimal", 0, " 1.5 GB ");
  unit("rate_bytes", 1, "19.1MB/s");
  unit("rate_bits", 1, "250Mbit/s");
  unit("rate_bps", 1, "1e3kbps");
  unit("duration_ms", 2, "40ms");
  unit("duration_exp", 2, "2.5e-3s");
  unit("duration_us", 2, "100\xc2\xb5s");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  g_out = argv[1];
  wire_seeds();
  piece_header_seeds();
  offer_seeds();
  offer_parts_seeds();
  frame_seeds();
  udp_seeds();
  journal_seeds();
  text_seeds();
  fuzz::mdns_seeds(g_out);
  return 0;
}
