// Whole sessions in one process: a Receiver on loopback in a thread and a
// SenderSession driving it, over real TCP lanes with real TLS and sealing.
// Covers what the command line cannot reach: several transfers on one
// session, hand-forged offers, and the report's fields.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/files/source_tree.hpp"
#include "engine/security/identity.h"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/receiver.hpp"
#include "engine/transfer/sender_session.hpp"
#include "engine/transfer/source_reader.hpp"
#include "test_dirs.hpp"

namespace braid::transfer {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

bool ipv6_loopback_usable() {
  int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

class RunningReceiver {
 public:
  RunningReceiver(const fs::path& dir, const fs::path& config, const std::string& code, bool two_families = false,
                  size_t max_lanes = 64, std::shared_ptr<DiskFaults> disk = nullptr,
                  uint32_t protocol = wire::kProtocolVersion, const fs::path& event_log = {}) {
    if (std::string error; !event_log.empty() && !log_.open(event_log.string(), error)) ADD_FAILURE() << error;
    ReceiveOptions o;
    o.protocol = protocol;
    o.disk_faults = std::move(disk);
    o.max_lanes = max_lanes;
    o.dir = dir.string();
    o.listen = {"127.0.0.1:0"};
    if (two_families && ipv6_loopback_usable()) o.listen.push_back("[::1]:0");
    o.code = code;
    o.yes = true;
    o.quiet = true;
    o.config_dir = config;
    auto started = Receiver::start(o, log_);
    if (auto* f = std::get_if<Failure>(&started)) {
      ADD_FAILURE() << f->message;
      return;
    }
    r_ = std::move(std::get<0>(started));
    thread_ = std::thread([this] { exit_code_ = r_->run(); });
  }
  ~RunningReceiver() { (void)stop(); }
  /// Stops the receiver; what `braid recv` would exit with.
  int stop() {
    if (r_ && thread_.joinable()) {
      r_->stop();
      thread_.join();
    }
    return exit_code_;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(r_->listening()[0].port()); }
  Receiver& get() { return *r_; }

 private:
  EventLog log_;
  std::unique_ptr<Receiver> r_;
  std::thread thread_;
  int exit_code_ = -1;
};

std::unique_ptr<SenderSession> connect_ok(const std::string& addr, const fs::path& config,
                                          std::optional<std::string> code, EventLog& log, int streams = 2) {
  ConnectOptions co;
  co.remote = addr;
  co.code = std::move(code);
  co.streams = streams;
  co.config_dir = config;
  auto c = SenderSession::connect(co, log);
  if (auto* f = std::get_if<Failure>(&c)) {
    ADD_FAILURE() << "connect failed: " << f->message;
    return nullptr;
  }
  return std::move(std::get<0>(c));
}

files::SourceTree scan(const std::vector<fs::path>& paths) {
  std::vector<std::string> p;
  for (const auto& x : paths) p.push_back(x.string());
  auto s = files::scan_sources(p);
  EXPECT_TRUE(s.ok()) << s.error;
  return s.tree;
}

struct SessionFixture : ::testing::Test {
  ScratchDir tmp;
  fs::path dst = tmp / "dst";
  fs::path outside = tmp / "outside";
  fs::path recv_cfg = tmp / "recv-config";
  fs::path send_cfg = tmp / "send-config";
  EventLog log;
  void SetUp() override {
    fs::create_directories(dst);
    fs::create_directories(outside);
  }
  bool nothing_outside() const { return fs::is_empty(outside); }
};

TEST_F(SessionFixture, SecondTransferInOneSessionWorks) {
  testing::write_random_file(tmp / "src1/a.bin", 3 << 20, 1);
  testing::write_random_file(tmp / "src2/b.bin", 2 << 20, 2);
  testing::write_random_file(tmp / "src2/c.bin", 100, 3);
  RunningReceiver r(dst, recv_cfg, "pair-me");
  auto s = connect_ok(r.address(), send_cfg, "pair-me", log);
  ASSERT_TRUE(s);
  TransferOptions opts;
  opts.chunk_size = 256 << 10;
  auto first = s->send(scan({tmp / "src1/a.bin"}), opts);
  EXPECT_EQ(first.exit_code, 0) << first.message;
  auto second = s->send(scan({tmp / "src2"}), opts);
  EXPECT_EQ(second.exit_code, 0) << second.message;
  EXPECT_EQ(first.report.transfer_id, 1u);
  EXPECT_EQ(second.report.transfer_id, 2u);
  s->close();
  EXPECT_EQ(testing::read_file(dst / "a.bin"), testing::read_file(tmp / "src1/a.bin"));
  EXPECT_EQ(testing::read_file(dst / "src2/b.bin"), testing::read_file(tmp / "src2/b.bin"));
  EXPECT_EQ(testing::read_file(dst / "src2/c.bin"), testing::read_file(tmp / "src2/c.bin"));
}

// The receiver's connections that epoll sets of this process watch, by fd:
// sockets bound to the receiver's port with a peer (accepted, not the
// listener). /proc/self/fdinfo of an epoll fd lists each watched fd as "tfd:".
std::vector<int> watched_receiver_connections(uint16_t port) {
  std::vector<int> found;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec).string() != "anon_inode:[eventpoll]") continue;
    std::ifstream info("/proc/self/fdinfo/" + e.path().filename().string());
    for (std::string line; std::getline(info, line);) {
      int fd = -1;
      if (std::sscanf(line.c_str(), "tfd: %d", &fd) != 1) continue;
      sockaddr_storage local{}, peer{};
      socklen_t ll = sizeof local, pl = sizeof peer;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0 || local.ss_family != AF_INET) continue;
      if (ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port) != port) continue;
      if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0) found.push_back(fd);
    }
  }
  return found;
}

// A connection the accept loop handed on (the session's TLS connection, a
// lane) leaves its epoll set: left there, a lane with bytes waiting made
// epoll_wait return at once, over and over — a core's worth of spinning on
// the receiver for as long as data flowed (issue 16).
TEST_F(SessionFixture, TheAcceptLoopStopsWatchingConnectionsOnceHandedOn) {
  testing::write_random_file(tmp / "src/a.bin", 1 << 20, 4);
  RunningReceiver r(dst, recv_cfg, "hand-on");
  auto s = connect_ok(r.address(), send_cfg, "hand-on", log, 3);
  ASSERT_TRUE(s);
  // The lanes must be there (the offer does not wait for them: a 1 MiB
  // file once went whole on lane 0 of a loaded host, and nothing was checked).
  s->wait_for_lanes(std::chrono::milliseconds(3000));
  auto out = s->send(scan({tmp / "src/a.bin"}), TransferOptions{});
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_GE(out.report.lanes.size(), 2u);
  // The session and its lanes are open here, each an accepted connection.
  EXPECT_EQ(watched_receiver_connections(r.get().listening()[0].port()), std::vector<int>{});
  s->close();
}

TEST_F(SessionFixture, ForgedOffersAreRefusedAndNothingLandsOutside) {
  fs::create_symlink(outside, dst / "link");  // planted in the target by someone else
  RunningReceiver r(dst, recv_cfg, "pair-me");
  auto s = connect_ok(r.address(), send_cfg, "pair-me", log);
  ASSERT_TRUE(s);
  auto offer_of = [](std::vector<wire::ManifestEntry> entries) {
    wire::Offer o;
    o.chunk_size = 1 << 20;
    o.entries = std::move(entries);
    return o;
  };
  auto file = [](std::string path) { return wire::ManifestEntry{wire::EntryKind::file, std::move(path), 10, 0644, 0, 0, ""}; };
  for (const std::string bad : {"../x", "/etc/x", "a/../../b", "link/x", "./x", "a//b", ""}) {
    auto answer = s->offer_only(offer_of({file(bad)}));
    EXPECT_FALSE(answer.accepted) << bad;
    EXPECT_TRUE(answer.reason == wire::RefuseReason::bad_path) << bad << ": " << answer.message;
    EXPECT_FALSE(answer.message.empty());
  }
  // A symlink in the offer followed by a file "through" it.
  auto answer = s->offer_only(offer_of(
      {wire::ManifestEntry{wire::EntryKind::symlink, "ln", 0, 0777, 0, 0, outside.string()}, file("ln/x")}));
  EXPECT_FALSE(answer.accepted);
  // A chunk size that would make the receiver hold gigabytes per piece.
  for (const uint64_t chunk : {uint64_t{0}, uint64_t{1} << 40}) {
    auto huge = offer_of({file("fine")});
    huge.chunk_size = chunk;
    auto a = s->offer_only(huge);
    EXPECT_FALSE(a.accepted) << chunk;
    EXPECT_TRUE(a.reason == wire::RefuseReason::bad_offer) << chunk << ": " << a.message;
  }
  EXPECT_TRUE(nothing_outside());
  EXPECT_FALSE(fs::exists(tmp / "x"));
  EXPECT_FALSE(fs::exists(tmp / "b"));
  EXPECT_FALSE(fs::exists("/etc/x"));
  // The session is not harmed: a real transfer still goes through.
  testing::write_random_file(tmp / "src/ok.bin", 1 << 20, 4);
  auto out = s->send(scan({tmp / "src/ok.bin"}), TransferOptions{});
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(testing::read_file(dst / "ok.bin"), testing::read_file(tmp / "src/ok.bin"));
  s->close();
  EXPECT_TRUE(nothing_outside());
}

TEST_F(SessionFixture, WrongCodeIsRefusedAndNothingIsWritten) {
  RunningReceiver r(dst, recv_cfg, "the-right-code");
  ConnectOptions co;
  co.remote = r.address();
  co.code = "a-wrong-code";
  co.config_dir = send_cfg;
  auto c = SenderSession::connect(co, log);
  auto* f = std::get_if<Failure>(&c);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->exit_code, kExitAuthFailed);
  EXPECT_NE(f->message.find("pairing failed"), std::string::npos) << f->message;
  EXPECT_TRUE(fs::is_empty(dst));
  // Without any code, an unknown receiver is refused too.
  co.code.reset();
  auto c2 = SenderSession::connect(co, log);
  ASSERT_NE(std::get_if<Failure>(&c2), nullptr);
  EXPECT_EQ(std::get<Failure>(c2).exit_code, kExitAuthFailed);
  EXPECT_TRUE(fs::is_empty(dst));
}

TEST_F(SessionFixture, PairedPeersNeedNoCodeAndAChangedKeyUnderTheirLabelIsRefusedLoudly) {
  RunningReceiver r(dst, recv_cfg, "pair-me");
  std::string label;
  {
    auto s = connect_ok(r.address(), send_cfg, "pair-me", log);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->peer().how, security::PeerAuth::paired);
    label = s->peer().name;
    s->close();
  }
  {
    auto s = connect_ok(r.address(), send_cfg, std::nullopt, log);  // pinned now: no code
    ASSERT_TRUE(s);
    EXPECT_EQ(s->peer().how, security::PeerAuth::pinned);
    s->close();
  }
  // The receiver gets a new key. Addressed by the label the sender pinned it
  // under, it is refused loudly, even with the receiver's live code.
  r.stop();
  const fs::path recv_cfg2 = tmp / "recv-config-2";
  RunningReceiver r2(dst, recv_cfg2, "pair-me-again");
  ConnectOptions co;
  co.remote = r2.address();
  co.config_dir = send_cfg;
  co.code = "pair-me-again";  // a code never overrides a pin
  co.peer_label = label;
  auto c = SenderSession::connect(co, log);
  auto* f = std::get_if<Failure>(&c);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->exit_code, kExitKeyChanged);
  EXPECT_NE(f->message.find("HAS CHANGED"), std::string::npos) << f->message;
  EXPECT_TRUE(fs::is_empty(dst));
  // By address alone, the new key is a new peer: the code pairs it, under another label.
  co.peer_label.clear();
  auto ok = SenderSession::connect(co, log);
  ASSERT_EQ(std::get_if<Failure>(&ok), nullptr) << std::get<Failure>(ok).message;
  EXPECT_NE(std::get<0>(ok)->peer().name, label);
  std::get<0>(ok)->close();
}

TEST_F(SessionFixture, ASenderWithANewKeyUnderTheSameNameIsANewPeer) {
  RunningReceiver r(dst, recv_cfg, "pair-me");
  {
    auto s = connect_ok(r.address(), send_cfg, "pair-me", log);
    ASSERT_TRUE(s);
    s->close();
  }
  // The sender's identity is recreated under the same name: to the receiver
  // it is an unknown peer (not a changed one), which needs the live code.
  fs::remove(send_cfg / "identity.key");
  fs::remove(send_cfg / "identity.crt");
  ConnectOptions co;
  co.remote = r.address();
  co.config_dir = send_cfg;
  auto none = SenderSession::connect(co, log);
  ASSERT_NE(std::get_if<Failure>(&none), nullptr);
  EXPECT_EQ(std::get<Failure>(none).exit_code, kExitAuthFailed);
  co.code = r.get().code();
  auto c = SenderSession::connect(co, log);
  ASSERT_EQ(std::get_if<Failure>(&c), nullptr) << std::get<Failure>(c).message;
  std::get<0>(c)->close();
}

// The receiver's code is one-time: it pairs one new host, then a new code is
// live (docs/security.md, "One-time codes").
TEST_F(SessionFixture, ACodePairsOneSenderAndTheNextNeedsTheNewCode) {
  RunningReceiver r(dst, recv_cfg, "pair-me");
  const std::string first = r.get().code();
  {
    auto s = connect_ok(r.address(), send_cfg, "pair-me", log);
    ASSERT_TRUE(s);
    s->close();
  }
  const std::string next = r.get().code();
  EXPECT_NE(next, first);
  EXPECT_FALSE(next.empty());

  // Another identity with the spent code is refused, and nothing is written.
  // (Under its own name: peers are still pinned by name, issue 14.)
  const fs::path other_cfg = tmp / "other-sender-config";
  ASSERT_TRUE(security::Identity::load_or_create(other_cfg, "other-sender"));
  ConnectOptions co;
  co.remote = r.address();
  co.code = "pair-me";
  co.config_dir = other_cfg;
  auto c = SenderSession::connect(co, log);
  auto* f = std::get_if<Failure>(&c);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->exit_code, kExitAuthFailed);
  EXPECT_NE(f->message.find("pairing failed"), std::string::npos) << f->message;
  EXPECT_TRUE(fs::is_empty(dst));

  // With the code the receiver shows now, it pairs and sends.
  testing::write_random_file(tmp / "src/two.bin", 100'000, 7);
  auto s = connect_ok(r.address(), other_cfg, r.get().code(), log);
  ASSERT_TRUE(s);
  auto out = s->send(scan({tmp / "src/two.bin"}), TransferOptions{});
  s->close();
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(testing::read_file(dst / "two.bin"), testing::read_file(tmp / "src/two.bin"));
  // The first sender is pinned: it needs no code at all.
  auto again = connect_ok(r.address(), send_cfg, std::nullopt, log);
  ASSERT_TRUE(again);
  again->close();
}

// Three wrong attempts retire the code; a fourth with the old right code
// fails; the new code works.
TEST_F(SessionFixture, ThreeWrongCodesRetireTheCodeAndTheNewOneWorks) {
  RunningReceiver r(dst, recv_cfg, "pair-me");
  const std::string first = r.get().code();
  auto attempt = [&](const std::string& code) {
    ConnectOptions co;
    co.remote = r.address();
    co.code = code;
    co.config_dir = send_cfg;
    auto c = SenderSession::connect(co, log);
    if (auto* f = std::get_if<Failure>(&c)) return f->exit_code;
    std::get<0>(c)->close();
    return 0;
  };
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(attempt("wrong-" + std::to_string(i)), kExitAuthFailed) << i;
    if (i < 3) {
      EXPECT_EQ(r.get().code(), first) << "retired after only " << i << " wrong attempts";
    }
  }
  const std::string retired_to = r.get().code();
  EXPECT_NE(retired_to, first);
  EXPECT_EQ(attempt("pair-me"), kExitAuthFailed);  // the old, right code
  EXPECT_TRUE(fs::is_empty(dst));
  // That 4th attempt was a wrong guess at the new code: one of its three.
  EXPECT_EQ(r.get().code(), retired_to);
  EXPECT_EQ(attempt(retired_to), 0);
}

TEST_F(SessionFixture, ReportTellsEachLanesTruth) {
  testing::write_random_file(tmp / "src/data.bin", 24 << 20, 5);
  RunningReceiver r(dst, recv_cfg, "pair-me", /*two_families=*/true);
  auto s = connect_ok(r.address(), send_cfg, "pair-me", log, 2);
  ASSERT_TRUE(s);
  s->wait_for_lanes(std::chrono::milliseconds(3000));  // the offer would not wait for them
  EXPECT_GE(s->live_lanes(), 2u);
  TransferOptions opts;
  opts.chunk_size = 256 << 10;
  auto out = s->send(scan({tmp / "src/data.bin"}), opts);
  s->close();
  ASSERT_EQ(out.exit_code, 0) << out.message;
  const auto& rep = out.report;
  EXPECT_TRUE(rep.verified);
  EXPECT_EQ(rep.bytes, 24u << 20);
  EXPECT_EQ(rep.files, 1u);
  EXPECT_GT(rep.seconds, 0);
  EXPECT_GT(rep.rate_bytes_per_sec, 0);
  ASSERT_GE(rep.lanes.size(), 2u);
  uint64_t bytes = 0, chunks = 0;
  double share = 0;
  for (const auto& l : rep.lanes) {
    EXPECT_FALSE(l.name.empty());
    EXPECT_NE(l.local.find(':'), std::string::npos);
    EXPECT_NE(l.remote.find(':'), std::string::npos);
    bytes += l.bytes;
    chunks += l.chunks;
    share += l.share;
    EXPECT_GE(l.acked_bytes, l.bytes);
    EXPECT_GE(l.wire_bytes, l.bytes);  // frames carry headers and tags on top
    if (l.bytes > 0) {
      EXPECT_GT(l.rate_bytes_per_sec, 0);
      EXPECT_GT(l.rtt_ms, 0);
    }
    EXPECT_TRUE(l.open_at_end);
  }
  EXPECT_EQ(bytes, rep.bytes);
  EXPECT_GE(chunks, 96u);  // 24 MiB in 256 KiB chunks, some maybe cut
  EXPECT_NEAR(share, 1.0, 1e-9);
  // The sum of the lanes' delivered rates cannot exceed the bytes over the time by much.
  auto json = to_json(rep);
  EXPECT_TRUE(json.contains("lanes"));
  EXPECT_TRUE(json["lanes"][0].contains("stalls"));
  EXPECT_TRUE(json["lanes"][0].contains("duplicates"));
  EXPECT_TRUE(json["lanes"][0].contains("abandoned"));
  EXPECT_EQ(testing::read_file(dst / "data.bin"), testing::read_file(tmp / "src/data.bin"));
}

TEST_F(SessionFixture, LanesBeyondTheReceiversCapAreRefusedWithTheReasonAndTheTransferGoesOn) {
  testing::write_random_file(tmp / "src/data.bin", 4 << 20, 9);
  RunningReceiver r(dst, recv_cfg, "pair-me", false, /*max_lanes=*/2);
  EventLog send_log;
  std::string error;
  ASSERT_TRUE(send_log.open((tmp / "send.log").string(), error)) << error;
  auto s = connect_ok(r.address(), send_cfg, "pair-me", send_log, /*streams=*/5);
  ASSERT_TRUE(s);
  auto count = [&](size_t& opened, size_t& refused) {
    opened = refused = 0;
    std::istringstream lines(testing::read_file(tmp / "send.log"));
    for (std::string line; std::getline(lines, line);) {
      opened += line.find("\"lane_open\"") != std::string::npos;
      refused += line.find("lane_failed") != std::string::npos &&
                 line.find("refused by the receiver: the receiver takes at most 2 lanes per session") !=
                     std::string::npos;
    }
  };
  // Lanes join in the background: wait until all five have their answer
  // (a session that ends first would refuse the stragglers for that reason).
  size_t opened = 0, refused = 0;
  for (int i = 0; i < 1000 && opened + refused < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count(opened, refused);
  }
  EXPECT_EQ(s->live_lanes(), 2u);
  auto out = s->send(scan({tmp / "src/data.bin"}), TransferOptions{});
  s->close();
  ASSERT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(testing::read_file(dst / "data.bin"), testing::read_file(tmp / "src/data.bin"));
  count(opened, refused);
  EXPECT_EQ(opened, 2u);   // 5 lanes asked, 2 taken
  EXPECT_EQ(refused, 3u);  // and the sender was told why for each of the others
}

}  // namespace
}  // namespace braid::transfer

namespace braid::transfer {
namespace {

// The source changed after a piece was hashed (the fault flips the last data
// byte of lane 0's 10th data frame once its hash is taken): the transfer
// fails loudly, the file never stands under its final name, and no byte of
// that piece reached the disk — every block of the kept .part is the
// source's or was never written.
struct FlipAfterHash : lanes::FrameFaults {
  void before_seal(uint32_t lane, uint64_t frame, std::span<uint8_t> payload) override {
    if (lane == 0 && frame == 9 && payload.size() > wire::PieceHeader::kSize) payload.back() ^= 0x01;
  }
};

TEST_F(SessionFixture, APieceWhoseBytesDoNotMatchItsHashFailsAndNeverReachesTheDisk) {
  const fs::path src = tmp / "src/big.bin";
  testing::write_random_file(src, 6 << 20, 9);
  RunningReceiver r(dst, recv_cfg, "bad-piece", false, 1);
  ConnectOptions co;
  co.remote = r.address();
  co.code = "bad-piece";
  co.streams = 1;
  co.max_lanes = 1;
  co.config_dir = send_cfg;
  co.faults.frames = std::make_shared<FlipAfterHash>();
  auto c = SenderSession::connect(co, log);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<SenderSession>>(c));
  auto s = std::move(std::get<0>(c));
  auto out = s->send(scan({src}), TransferOptions{});
  EXPECT_EQ(out.exit_code, kExitVerifyFailed) << out.message;
  EXPECT_NE(out.message.find("did not match"), std::string::npos) << out.message;
  s->close();
  EXPECT_FALSE(fs::exists(dst / "big.bin"));
  std::ifstream a(src, std::ios::binary);
  std::string want((std::istreambuf_iterator<char>(a)), {});
  for (const auto& e : fs::directory_iterator(dst)) {
    if (e.path().extension() != ".part") continue;
    std::ifstream b(e.path(), std::ios::binary);
    std::string got((std::istreambuf_iterator<char>(b)), {});
    for (size_t at = 0; at < got.size(); at += 4096) {
      const std::string_view blk(got.data() + at, std::min<size_t>(4096, got.size() - at));
      const bool zero = blk.find_first_not_of('\0') == std::string_view::npos;
      EXPECT_TRUE(zero || std::string_view(want).substr(at, blk.size()) == blk) << "block at " << at;
    }
  }
  EXPECT_TRUE(nothing_outside());
}

}  // namespace
}  // namespace braid::transfer

namespace braid::transfer {
namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// UDP blocked on the path (every datagram the sender's UDP lanes send is
// lost): each UDP lane gives up after 2 s without an answer and a TCP lane
// takes its path; the file arrives whole.
TEST_F(SessionFixture, UdpBlockedOnThePathFallsBackToTcpLanes) {
  const fs::path src = tmp / "src/data.bin";
  testing::write_random_file(src, 32 << 20, 21);
  RunningReceiver r(dst, recv_cfg, "udp-blocked");
  EventLog slog;
  std::string error;
  ASSERT_TRUE(slog.open((tmp / "send.log").string(), error)) << error;
  ConnectOptions co;
  co.remote = r.address();
  co.code = "udp-blocked";
  co.config_dir = send_cfg;
  co.lanes = {"udp:127.0.0.1=" + r.address(), "udp:127.0.0.1=" + r.address()};
  co.faults.udp.drop_probability = 1.0;
  auto c = SenderSession::connect(co, slog);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<SenderSession>>(c));
  auto s = std::move(std::get<0>(c));
  auto out = s->send(scan({src}), TransferOptions{});
  s->close();
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(read_all(src), read_all(dst / "data.bin"));
  const std::string log = read_all(tmp / "send.log");
  EXPECT_EQ(count_of(log, "\"udp_fallback\""), 2u);
  EXPECT_NE(log.find("no answer over UDP"), std::string::npos);
  uint64_t by_fallback = 0;
  for (const auto& l : out.report.lanes)
    if (l.kind == "tcp" && l.lane_id >= 3) by_fallback += l.bytes;
  EXPECT_GT(by_fallback, 0u);
}

// UDP lane 1 dies after 8 MiB: the transfer completes on lane 2, and the
// report says why lane 1 closed.
TEST_F(SessionFixture, AUdpLaneThatDiesMidTransferHoldsNothingUp) {
  const fs::path src = tmp / "src/data.bin";
  testing::write_random_file(src, 128 << 20, 22);
  RunningReceiver r(dst, recv_cfg, "udp-kill");
  ConnectOptions co;
  co.remote = r.address();
  co.code = "udp-kill";
  co.config_dir = send_cfg;
  co.lanes = {"udp:127.0.0.1=" + r.address(), "udp:127.0.0.1=" + r.address()};
  // Early enough that lane 1 surely carries that much: with one startup per
  // path the lanes' shares vary, and lane 1 once carried under 32 MiB of 128.
  co.faults.udp_kill_after[1] = 8 << 20;
  auto c = SenderSession::connect(co, log);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<SenderSession>>(c));
  auto s = std::move(std::get<0>(c));
  auto out = s->send(scan({src}), TransferOptions{});
  s->close();
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(read_all(src), read_all(dst / "data.bin"));
  // The killed lane's path may get a lane again (a lane that worked is
  // opened again, with backoff) when the transfer outlasts the backoff, as
  // on a loaded host: a third lane in the report then.
  ASSERT_GE(out.report.lanes.size(), 2u);
  const auto killed = std::find_if(out.report.lanes.begin(), out.report.lanes.end(),
                                   [](const LaneReport& l) { return l.lane_id == 1; });
  ASSERT_NE(killed, out.report.lanes.end());
  EXPECT_FALSE(killed->open_at_end);
  EXPECT_NE(killed->close_reason.find("lane killed"), std::string::npos) << killed->close_reason;
  const auto other = std::find_if(out.report.lanes.begin(), out.report.lanes.end(),
                                  [](const LaneReport& l) { return l.lane_id == 2; });
  ASSERT_NE(other, out.report.lanes.end());
  EXPECT_TRUE(other->open_at_end);
  EXPECT_GT(other->bytes, 0u);
}

// A disk that fills up after `room` bytes (every later write fails with
// ENOSPC), or takes `delay` longer for every write.
class TestDisk : public DiskFaults {
 public:
  TestDisk(uint64_t room, std::chrono::milliseconds delay) : room_(room), delay_(delay) {}
  int before_write(uint64_t, size_t n) override {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    if (written_.fetch_add(n) + n > room_) return ENOSPC;
    return 0;
  }

 private:
  uint64_t room_;
  std::chrono::milliseconds delay_;
  std::atomic<uint64_t> written_{0};
};

const TransferReport* recv_report(const std::vector<TransferReport>& reports) {
  for (const auto& r : reports)
    if (r.role == "recv") return &r;
  return nullptr;
}

// The disk fills up mid-transfer: the sender is told at once (exit 8, "the
// target disk is full"), nothing stands under its final name, the
// temporary files and the journal stay; with room again the same transfer
// resumes what arrived.
TEST_F(SessionFixture, ADiskThatFillsUpMidTransferKeepsWhatArrivedForAResume) {
  const fs::path src = tmp / "src/big.bin";
  testing::write_random_file(src, 24 << 20, 23);
  TransferOptions opts;
  opts.chunk_size = 1 << 20;
  {
    RunningReceiver r(dst, recv_cfg, "disk-full", false, 64, std::make_shared<TestDisk>(10 << 20, std::chrono::milliseconds(0)));
    auto s = connect_ok(r.address(), send_cfg, "disk-full", log);
    ASSERT_TRUE(s);
    auto out = s->send(scan({src}), opts);
    s->close();
    EXPECT_EQ(out.exit_code, kExitDiskFull) << out.message;
    EXPECT_NE(out.message.find("disk is full"), std::string::npos) << out.message;
    EXPECT_EQ(r.stop(), kExitDiskFull);  // the receiver says so too
  }
  EXPECT_FALSE(fs::exists(dst / "big.bin"));
  size_t parts = 0, journals = 0;
  for (const auto& e : fs::directory_iterator(dst)) {
    const std::string name = e.path().filename().string();
    parts += name.starts_with(".braid-") && name.ends_with(".part");
    journals += name.starts_with(".braid-resume-");
  }
  EXPECT_EQ(parts, 1u);
  EXPECT_EQ(journals, 1u);
  RunningReceiver again(dst, recv_cfg, "disk-full");
  auto s = connect_ok(again.address(), send_cfg, std::nullopt, log);  // paired by the first run
  ASSERT_TRUE(s);
  auto out = s->send(scan({src}), opts);
  s->close();
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(read_all(src), read_all(dst / "big.bin"));
  EXPECT_GT(out.report.resumed_bytes, 0u);            // what arrived before the disk filled up
  EXPECT_LE(out.report.resumed_bytes, uint64_t{10} << 20);  // never more than the disk took
}

// A disk slower than the network (every 1 MiB write 20 ms late: at most
// 50 MiB/s) behind two UDP lanes on loopback: the lanes stop crediting the
// sender's windows while the writer is behind, so the receiver holds at
// most the write backlog (64 MiB) and the lanes' windows of piece bytes,
// not what the network could bring (~200 MiB without the held credit).
TEST_F(SessionFixture, ASlowDiskHoldsUdpLanesBackNotMemory) {
  const fs::path src = tmp / "src/data.bin";
  testing::write_random_file(src, 224 << 20, 24);
  RunningReceiver r(dst, recv_cfg, "slow-disk", false, 64, std::make_shared<TestDisk>(UINT64_MAX / 2, std::chrono::milliseconds(20)));
  ConnectOptions co;
  co.remote = r.address();
  co.code = "slow-disk";
  co.config_dir = send_cfg;
  co.lanes = {"udp:127.0.0.1=" + r.address(), "udp:127.0.0.1=" + r.address()};
  auto c = SenderSession::connect(co, log);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<SenderSession>>(c));
  auto s = std::move(std::get<0>(c));
  auto out = s->send(scan({src}), TransferOptions{});
  s->close();
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(read_all(src), read_all(dst / "data.bin"));
  const auto reports = r.get().reports();
  const TransferReport* rep = recv_report(reports);
  ASSERT_NE(rep, nullptr);
  const uint64_t MiB = 1 << 20;
  std::cout << "receiver's peak of UDP piece bytes in memory: " << rep->buffered_peak_bytes / MiB << " MiB\n";
  EXPECT_GT(rep->buffered_peak_bytes, 32 * MiB);   // the disk really was the bottleneck
  EXPECT_LT(rep->buffered_peak_bytes, 116 * MiB);  // 64 backlog + 2 x 16 window + pieces at the edges (~96)
}

// Protocol 8's round trips: with the receiver pinned and no code, the first
// offer goes in TLS's last flight (right behind the peer check's HELLO) and
// the run ends with the receiver closing behind its result; a first contact
// (a code: pairing may follow) offers after the handshake, as before.
TEST_F(SessionFixture, AKnownReceiverGetsTheOfferWithTheHandshakeAndClosesWithItsResult) {
  testing::write_random_file(tmp / "src/first.bin", 1 << 20, 21);
  testing::write_random_file(tmp / "src/second.bin", 3 << 20, 22);
  RunningReceiver r(dst, recv_cfg, "pair-me");
  auto offered_early = [&](const fs::path& log_file) {
    return testing::read_file(log_file).find("\"offered_early\"") != std::string::npos;
  };
  for (const char* name : {"first.bin", "second.bin"}) {
    const bool pairing = std::string(name) == "first.bin";
    const fs::path log_file = tmp / (std::string(name) + ".log");
    EventLog slog;
    std::string error;
    ASSERT_TRUE(slog.open(log_file.string(), error)) << error;
    const auto tree = scan({tmp / "src" / name});
    TransferOptions opts;
    opts.chunk_size = 256 << 10;
    opts.last = true;
    ConnectOptions co;
    co.remote = r.address();
    if (pairing) co.code = "pair-me";
    co.config_dir = send_cfg;
    co.first_tree = &tree;
    co.first_options = &opts;
    auto c = SenderSession::connect(co, slog);
    ASSERT_TRUE(std::holds_alternative<std::unique_ptr<SenderSession>>(c)) << std::get<Failure>(c).message;
    auto s = std::move(std::get<0>(c));
    auto out = s->send(tree, opts);
    const auto closing = std::chrono::steady_clock::now();
    s->close();
    const double close_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - closing).count();
    ASSERT_EQ(out.exit_code, 0) << out.message;
    EXPECT_EQ(testing::read_file(dst / name), testing::read_file(tmp / "src" / name));
    EXPECT_EQ(offered_early(log_file), !pairing) << name;
    // The first run's TCP lanes left their figures: the second's lanes get
    // work for them at once (LaneTraits::rate_hint), and the log says so.
    EXPECT_EQ(testing::read_file(log_file).find("known_rate_mbit") != std::string::npos, !pairing) << name;
    // The receiver's lanes closed behind its result: close() waits for nothing
    // (it waited up to 500 ms for them after its bye).
    EXPECT_LT(close_ms, 400) << name;
  }
  EXPECT_EQ(r.stop(), 0);
  EXPECT_TRUE(nothing_outside());
}

// One session that sends `src` with its first offer ready for TLS's last
// flight (as `braid send` does), logging to `log_file`: its outcome and its
// log's text.
struct LoggedRun {
  TransferOutcome out;
  std::string log;
};
LoggedRun send_with_early_offer(ConnectOptions co, const fs::path& src, const TransferOptions& opts,
                                const fs::path& log_file) {
  EventLog slog;
  std::string error;
  EXPECT_TRUE(slog.open(log_file.string(), error)) << error;
  const auto tree = scan({src});
  co.first_tree = &tree;
  co.first_options = &opts;
  auto c = SenderSession::connect(co, slog);
  if (!std::holds_alternative<std::unique_ptr<SenderSession>>(c)) {
    ADD_FAILURE() << std::get<Failure>(c).message;
    return {};
  }
  auto s = std::move(std::get<0>(c));
  LoggedRun out{s->send(tree, opts), {}};
  s->close();
  out.log = testing::read_file(log_file);
  return out;
}

// A known receiver over a UDP path that left figures: the first UDP lane on
// lane 0's path asks for its receiver end in TLS's last flight, beside the
// offer, and the plan from the receiver's addresses does not open it twice;
// lanes named by --lane all ask at once (their addresses are given).
TEST_F(SessionFixture, AKnownReceiversUdpLanesAreAskedForWithTheHandshake) {
  testing::write_random_file(tmp / "src/a.bin", 6 << 20, 41);
  RunningReceiver r(dst, recv_cfg, "udp-early");
  using Run = LoggedRun;
  int n = 0;
  auto run = [&](std::optional<std::string> code, std::vector<std::string> lanes) {
    TransferOptions opts;
    opts.last = true;
    ConnectOptions co;
    co.remote = r.address();
    co.code = std::move(code);
    co.config_dir = send_cfg;
    co.transport = Transport::udp;
    co.lanes = std::move(lanes);
    Run out = send_with_early_offer(co, tmp / "src/a.bin", opts, tmp / ("run" + std::to_string(++n) + ".log"));
    if (out.out.exit_code == 0) {
      EXPECT_EQ(testing::read_file(dst / "a.bin"), testing::read_file(tmp / "src/a.bin"));
    }
    fs::remove(dst / "a.bin");
    return out;
  };
  const auto count = [](const std::string& log, const std::string& what) {
    size_t k = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++k;
    return k;
  };
  const auto asked_before_the_handshake_ended = [](const std::string& log) {
    return log.find("\"udp_open_early\"") < log.find("\"authenticated\"");
  };
  const auto udp_lanes_opened = [&](const std::string& log) { return count(log, "\"kind\":\"udp\",\"lane\""); };
  // First contact: pairs, learns the protocol, and the UDP lanes leave figures.
  Run first = run("udp-early", {});
  ASSERT_EQ(first.out.exit_code, 0) << first.out.message;
  EXPECT_EQ(count(first.log, "\"udp_open_early\""), 0u);
  ASSERT_GT(udp_lanes_opened(first.log), 0u) << first.log;
  // Known peer, known path: the first lane on lane 0's path asks early (the
  // plan goes round the paths before a second lane on any), and the plan
  // opens no lane twice: at most its two streams (a lane the 6 MiB outran
  // does not open at all).
  Run second = run(std::nullopt, {});
  ASSERT_EQ(second.out.exit_code, 0) << second.out.message;
  EXPECT_EQ(count(second.log, "\"udp_open_early\""), 1u) << second.log;
  EXPECT_TRUE(asked_before_the_handshake_ended(second.log)) << second.log;
  EXPECT_LE(udp_lanes_opened(second.log), 2u) << second.log;
  EXPECT_EQ(count(second.log, "udp_open_early_unplanned"), 0u) << second.log;
  // Named lanes: all three ask early, and no more open.
  const std::string spec = "udp:127.0.0.1=" + r.address();
  Run third = run(std::nullopt, {spec, spec, spec});
  ASSERT_EQ(third.out.exit_code, 0) << third.out.message;
  EXPECT_EQ(count(third.log, "\"udp_open_early\""), 3u) << third.log;
  EXPECT_TRUE(asked_before_the_handshake_ended(third.log)) << third.log;
  EXPECT_LE(udp_lanes_opened(third.log), 3u) << third.log;
  EXPECT_EQ(count(third.log, "udp_open_early_unplanned"), 0u) << third.log;
  EXPECT_EQ(r.stop(), 0);
}

// The early offer goes only to a receiver whose protocol the sender
// remembers (path-figures.json): without that memory it waits for the
// addresses; with a wrong one (braid went back to protocol 7 there) the
// offer that protocol 7 cannot take ends in one line, and the memory is
// mended, so the next run's early offer is right and its lanes join.
TEST_F(SessionFixture, AnEarlyOfferGoesOnTheProtocolRememberedAndAWrongMemoryEndsInOneLine) {
  testing::write_random_file(tmp / "src/a.bin", 2 << 20, 31);
  // Protocol 0: it says nothing in its addresses, as protocol 7 and older did.
  RunningReceiver r(dst, recv_cfg, "old-peer", false, 64, nullptr, 0);
  const fs::path memory = send_cfg / "path-figures.json";
  using Run = LoggedRun;
  int n = 0;
  auto run = [&](std::optional<std::string> code, const TransferOptions& opts) {
    ConnectOptions co;
    co.remote = r.address();
    co.code = std::move(code);
    co.config_dir = send_cfg;
    co.lanes = {"127.0.0.1=" + r.address(), "127.0.0.1=" + r.address()};
    return send_with_early_offer(co, tmp / "src/a.bin", opts, tmp / ("run" + std::to_string(++n) + ".log"));
  };
  const auto has = [](const Run& x, const std::string& what) { return x.log.find(what) != std::string::npos; };
  TransferOptions plain;
  plain.last = true;
  // First contact (a code): no early offer; the protocol is remembered.
  Run first = run("old-peer", plain);
  ASSERT_EQ(first.out.exit_code, 0) << first.out.message;
  EXPECT_FALSE(has(first, "\"offered_early\""));
  std::string text = testing::read_file(memory);
  ASSERT_NE(text.find("\"said\": false"), std::string::npos) << text;
  // Pinned, memory lost: it waits for the addresses, and learns again.
  fs::remove(memory);
  Run forgot = run(std::nullopt, plain);
  ASSERT_EQ(forgot.out.exit_code, 0) << forgot.out.message;
  EXPECT_FALSE(has(forgot, "\"offered_early\""));
  EXPECT_TRUE(has(forgot, "offer_after_addresses"));
  // A wrong memory: protocol 9. A backup needs 8: the offer went early and
  // ends in the line start_transfer says to a receiver known to be older.
  text = testing::read_file(memory);
  const auto at = text.find("\"said\": false");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, std::strlen("\"said\": false"), "\"said\": true");
  const auto v = text.find("\"version\": 7");
  ASSERT_NE(v, std::string::npos) << text;
  text.replace(v, std::strlen("\"version\": 7"), "\"version\": " + std::to_string(wire::kProtocolVersion));
  std::ofstream(memory) << text;
  TransferOptions backup = plain;
  backup.sync.sync = true;
  backup.sync.backup_suffix = "~";
  Run wrong = run(std::nullopt, backup);
  EXPECT_TRUE(has(wrong, "\"offered_early\""));
  EXPECT_TRUE(has(wrong, "peer_protocol_changed"));
  EXPECT_EQ(wrong.out.exit_code, kExitRefused);
  EXPECT_NE(wrong.out.message.find("protocol 7 or older, and --backup-suffix needs protocol 8"), std::string::npos)
      << wrong.out.message;
  // Mended: the next early offer is right, and both lanes join protocol 7.
  // The source's first read waits (10 s at most) until both have joined, so
  // a short transfer cannot end before their joins are answered.
  testing::write_random_file(tmp / "src/a.bin", 2 << 20, 32);
  struct WaitForJoins : ReadFaults {
    fs::path log_file;
    std::atomic<bool> waited{false};
    void before_read(uint64_t, uint64_t) override {
      if (waited.exchange(true)) return;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (std::chrono::steady_clock::now() < until) {
        const std::string text = testing::read_file(log_file);
        size_t opened = 0;
        for (size_t p = text.find("\"lane_open\""); p != std::string::npos; p = text.find("\"lane_open\"", p + 1)) ++opened;
        if (opened >= 3) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  };
  auto wait = std::make_shared<WaitForJoins>();
  wait->log_file = tmp / ("run" + std::to_string(n + 1) + ".log");
  TransferOptions held = plain;
  held.read_faults = wait;
  Run mended = run(std::nullopt, held);
  ASSERT_EQ(mended.out.exit_code, 0) << mended.out.message;
  EXPECT_TRUE(has(mended, "\"offered_early\""));
  EXPECT_FALSE(has(mended, "peer_protocol_changed"));
  EXPECT_EQ(testing::read_file(dst / "a.bin"), testing::read_file(tmp / "src/a.bin"));
  size_t joined = 0;
  for (size_t p = mended.log.find("\"lane_open\""); p != std::string::npos; p = mended.log.find("\"lane_open\"", p + 1))
    ++joined;
  EXPECT_EQ(joined, 3u) << mended.log;  // lane 0 and the two --lane lanes
  // (The receiver's exit says the wrong run's transfer was abandoned: this
  // one takes the offer an older braid would have ignored.)
  r.stop();
}

// ---- protocol 9: a streamed offer answered part by part -----------------------

// A tree walked in batches (send_walking, kWalkBatch entries each) whose
// first batches hold more than an offer part (~1 MiB of entries: long
// names) and several MiB of file bytes, so whole chunks of accepted
// entries exist before the walk ends: `batches` directories of kWalkBatch
// 1 KiB files, the last with `last_files` more.
void make_streamed_tree(const fs::path& root, size_t batches, size_t last_files = 8) {
  const std::string pad(120, 'n');
  std::string bytes(1024, '\0');
  for (size_t d = 0; d <= batches; ++d) {
    char dir[16];
    std::snprintf(dir, sizeof dir, "d%03zu", d);
    fs::create_directories(root / dir);
    const size_t n = d < batches ? kWalkBatch : last_files;
    for (size_t i = 0; i < n; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "%06zu-", i);
      for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<char>((d * 131 + i * 31 + k * 7) & 0xff);
      std::ofstream(root / dir / (name + pad), std::ios::binary) << bytes;
    }
  }
}

// Any regular file with bytes under `dir` (not a journal): the receiver
// makes a file when its first verified bytes come.
// The regular files under `dir` with bytes in them (resume journals aside).
std::set<fs::path> files_written(const fs::path& dir) {
  std::set<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().starts_with(".braid-resume-")) continue;
    if (it->is_regular_file(ec) && it->file_size(ec) > 0) out.insert(it->path());
  }
  return out;
}

// Holds the walk back before its last batch until the receiver wrote a
// piece (at most `wait`): with early answers that happens, without it cannot.
// Files that were there before (an earlier run's) do not count.
class WaitBeforeLastBatch : public WalkFaults {
 public:
  WaitBeforeLastBatch(fs::path dst, std::chrono::milliseconds wait)
      : dst_(std::move(dst)), wait_(wait), before_(files_written(dst_)) {}
  void before_batch(size_t walked, bool last) override {
    if (!last) return;
    walked_before_last = walked;
    const auto until = std::chrono::steady_clock::now() + wait_;
    while (!(landed = some_file_written()) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::atomic<bool> landed{false};
  std::atomic<size_t> walked_before_last{0};

 private:
  bool some_file_written() const {
    const auto now = files_written(dst_);
    return std::any_of(now.begin(), now.end(), [&](const fs::path& f) { return !before_.count(f); });
  }
  fs::path dst_;
  std::chrono::milliseconds wait_;
  std::set<fs::path> before_;
};

// The walk's tree must outlive the session's lanes (they may still be
// reading a piece of it when the transfer ends), as `braid send`'s does.
struct Streamed {
  files::SourceTree tree;
  files::ScanResult walk;
};

TransferOutcome send_streamed(SenderSession& s, const fs::path& src, const TransferOptions& opts, Streamed& keep) {
  return s.send_walking({src.string()}, files::ScanOptions{}, keep.tree, keep.walk, opts);
}

// One streamed send of `src` to `r`, paired with `code`, its last batch held
// back until a piece landed in `dst` (at most `wait`): the setup the
// protocol-9 tests share.
struct HeldWalk {
  TransferOutcome out;
  std::shared_ptr<WaitBeforeLastBatch> walk;
};
// One session, paired with `code`, that sends `src` as it walks it.
TransferOutcome send_streamed_to(RunningReceiver& r, const std::string& code, const fs::path& send_cfg, EventLog& log,
                                 const fs::path& src, const TransferOptions& opts) {
  auto s = connect_ok(r.address(), send_cfg, code, log);
  if (!s) {
    ADD_FAILURE() << "no session with the receiver";
    TransferOutcome none;
    none.exit_code = -1;
    return none;
  }
  Streamed walked;
  TransferOutcome out = send_streamed(*s, src, opts, walked);
  s->close();
  return out;
}

HeldWalk send_holding_last_batch(RunningReceiver& r, const std::string& code, const fs::path& send_cfg, EventLog& log,
                                 const fs::path& src, const fs::path& dst, TransferOptions opts,
                                 std::chrono::milliseconds wait) {
  HeldWalk run{{}, std::make_shared<WaitBeforeLastBatch>(dst, wait)};
  opts.walk_faults = run.walk;
  run.out = send_streamed_to(r, code, send_cfg, log, src, opts);
  return run;
}

bool same_tree(const fs::path& a, const fs::path& b) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    const fs::path there = b / fs::relative(e.path(), a);
    if (e.is_directory() ? !fs::is_directory(there) : read_all(e.path()) != read_all(there)) {
      ADD_FAILURE() << there << " differs";
      return false;
    }
    ++n;
  }
  size_t m = 0;
  for (const auto& e : fs::recursive_directory_iterator(b)) m += !e.path().filename().string().starts_with(".braid-");
  EXPECT_EQ(n, m);
  return n == m;
}

// Protocol 9 over real lanes: the receiver answers the offer part by part,
// so pieces of the first directories are written while the sender has not
// walked (let alone offered) its last batch; the tree arrives whole.
TEST_F(SessionFixture, AStreamedOfferIsAnsweredPartByPartAndItsFirstPiecesLandBeforeTheLastPart) {
  const fs::path src = tmp / "src/tree";
  make_streamed_tree(src, 3);
  RunningReceiver r(dst, recv_cfg, "early");
  const auto [out, walk] = send_holding_last_batch(r, "early", send_cfg, log, src, dst, {}, std::chrono::seconds(20));
  ASSERT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(walk->walked_before_last.load(), 3 * kWalkBatch);  // three full batches went first
  EXPECT_TRUE(walk->landed) << "no piece was written before the walk's last batch";
  EXPECT_EQ(r.stop(), 0);
  EXPECT_TRUE(same_tree(src, dst / "tree"));
  EXPECT_TRUE(nothing_outside());
}

// Issue 18: a streamed walk answered part by part holds a window of its
// entries, not the tree. With a window of one batch, the entries whose
// bytes are acked leave the sender's tree as the walk goes on (a lane that
// still read them would fail the transfer), and the tree arrives whole.
struct WatchHeld : WalkFaults {
  const files::SourceTree* tree = nullptr;
  fs::path dst;
  size_t peak = 0;  // entries held, seen before each batch joins
  void before_batch(size_t walked, bool) override {
    EXPECT_EQ(walked, tree->size());
    peak = std::max(peak, tree->entries.size());
    // Past the second batch, until the receiver has begun 2,048 files (two
    // chunks of 1,024 files of 1 KiB): a walk that outran every ack on a
    // loaded host would let nothing go, and show nothing (the wait ends
    // after 20 s; `first` below then fails).
    if (walked != 2 * kWalkBatch) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (files_written(dst).size() < 2048 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
};
TEST_F(SessionFixture, AStreamedWalkLetsGoOfTheEntriesWhoseBytesAreAckedAndHoldsAWindow) {
  const fs::path src = tmp / "src/tree";
  make_streamed_tree(src, 10);  // 10 × kWalkBatch files of 1 KiB, 11 directories, then 8 files
  RunningReceiver r(dst, recv_cfg, "window");
  auto s = connect_ok(r.address(), send_cfg, "window", log);
  ASSERT_TRUE(s);
  Streamed walked;
  auto watch = std::make_shared<WatchHeld>();
  watch->tree = &walked.tree;
  watch->dst = dst;
  TransferOptions opts;
  opts.walk_window = kWalkBatch;
  opts.walk_faults = watch;
  const TransferOutcome out = send_streamed(*s, src, opts, walked);
  s->close();
  ASSERT_EQ(out.exit_code, 0) << out.message;
  const size_t all = 10 * kWalkBatch + 8 + 12;
  EXPECT_EQ(walked.tree.size(), all);
  EXPECT_GT(walked.tree.first, 0u) << "no entry was let go";
  // At most the window and a batch past what is needed, held until as many
  // have gone as stay (SourceTree::release_before): twice that, and a batch.
  EXPECT_LE(watch->peak, 2 * (opts.walk_window + kWalkBatch) + kWalkBatch);
  EXPECT_LT(watch->peak, all / 2);
  RecordProperty("peak_entries_held", std::to_string(watch->peak));
  RecordProperty("first_entry_held_at_end", std::to_string(walked.tree.first));
  EXPECT_EQ(out.report.files, 10 * kWalkBatch + 8);
  EXPECT_EQ(r.stop(), 0);
  EXPECT_TRUE(same_tree(src, dst / "tree"));
  EXPECT_TRUE(nothing_outside());
}

// The receiver's side of the window (protocol 10): the walk is in path
// order, so the receiver forgets the files it wrote as the walk goes on
// (its log says how many, and how many entries it still held), and the
// tree arrives whole.
TEST_F(SessionFixture, AReceiverForgetsTheFilesItWroteWhileTheWalkGoesOn) {
  const fs::path src = tmp / "src/tree";
  make_streamed_tree(src, 10);
  const fs::path events = tmp / "recv-events.jsonl";
  RunningReceiver r(dst, recv_cfg, "forget", false, 64, nullptr, wire::kProtocolVersion, events);
  auto s = connect_ok(r.address(), send_cfg, "forget", log);
  ASSERT_TRUE(s);
  Streamed walked;
  TransferOptions opts;
  opts.walk_window = kWalkBatch;  // the walk waits for the acks: parts come after bytes are written
  const TransferOutcome out = send_streamed(*s, src, opts, walked);
  s->close();
  ASSERT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ(r.stop(), 0);
  EXPECT_TRUE(same_tree(src, dst / "tree"));
  EXPECT_TRUE(nothing_outside());
  const size_t all = 10 * kWalkBatch + 8 + 12;
  size_t forgotten = 0, events_seen = 0, held_least = all;
  std::ifstream in(events);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("event", "") != "entries_forgotten") continue;
    ++events_seen;
    forgotten += j.at("entries").get<size_t>();
    held_least = std::min(held_least, j.at("held").get<size_t>());
  }
  EXPECT_GE(events_seen, 2u);
  EXPECT_GT(forgotten, all / 2) << "the receiver kept most of what it wrote";
  EXPECT_LT(forgotten, all);  // the last parts stay until the end, and the directories
  RecordProperty("entries_forgotten", std::to_string(forgotten));
  RecordProperty("least_held_after_a_release", std::to_string(held_least));
}

// The same walk answered whole (the sender does not ask, as protocol 8):
// nothing can land before the last part, so the wait runs out.
TEST_F(SessionFixture, AStreamedOfferAnsweredWholeWritesNothingBeforeTheLastPart) {
  const fs::path src = tmp / "src/tree";
  make_streamed_tree(src, 3);
  RunningReceiver r(dst, recv_cfg, "whole");
  TransferOptions opts;
  opts.early_pieces = false;
  const auto [out, walk] = send_holding_last_batch(r, "whole", send_cfg, log, src, dst, opts, std::chrono::milliseconds(500));
  ASSERT_EQ(out.exit_code, 0) << out.message;
  EXPECT_FALSE(walk->landed);
  EXPECT_EQ(r.stop(), 0);
  EXPECT_TRUE(same_tree(src, dst / "tree"));
}

// A later part the receiver cannot take (a file of the last batch where the
// target has a directory), after pieces of the first parts were written:
// refused with one reason and a refusal's exit code on both ends, and
// nothing stands under a final name but what was there.
TEST_F(SessionFixture, ARefusedLaterPartEndsTheTransferAndNothingStandsUnderAFinalName) {
  const fs::path src = tmp / "src/tree";
  make_streamed_tree(src, 3);
  std::ofstream(src / "zz-clash") << "a file here, a directory there";
  fs::create_directories(dst / "tree/zz-clash");
  RunningReceiver r(dst, recv_cfg, "refused");
  const auto [out, walk] = send_holding_last_batch(r, "refused", send_cfg, log, src, dst, {}, std::chrono::seconds(20));
  EXPECT_TRUE(walk->landed);
  EXPECT_EQ(out.exit_code, kExitRefused) << out.message;
  EXPECT_NE(out.message.find("exists as a directory in the target"), std::string::npos) << out.message;
  EXPECT_EQ(r.stop(), kExitRefused);
  // tree/ stood there already: its new directories are staged (".braid-…"),
  // none under its final name.
  for (const auto& e : fs::directory_iterator(dst / "tree")) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "zz-clash" || name.starts_with(".braid-")) << name;
  }
  EXPECT_TRUE(fs::is_empty(dst / "tree/zz-clash"));
  EXPECT_TRUE(nothing_outside());
}

// A disk that takes every write and says it has `free` bytes free.
class SmallDisk : public DiskFaults {
 public:
  explicit SmallDisk(uint64_t free) : free_(free) {}
  int before_write(uint64_t, size_t) override { return 0; }
  std::optional<uint64_t> free_bytes() override { return free_; }

 private:
  uint64_t free_;
};

// Protocol 9: a streamed offer whose data outgrows the target's free space
// is refused at the part that takes it past — after the first parts, which
// fit, and before the last — with one line that says so, on both ends.
TEST_F(SessionFixture, AStreamedOfferLargerThanTheFreeSpaceIsRefusedAtThePartThatDoesNotFit) {
  const fs::path src = tmp / "src/tree";
  make_streamed_tree(src, 3);  // 3 × kWalkBatch files of 1 KiB, then 8
  constexpr uint64_t kFree = 6 << 20;  // a batch and a half
  RunningReceiver r(dst, recv_cfg, "small-disk", false, 64, std::make_shared<SmallDisk>(kFree));
  const auto out = send_streamed_to(r, "small-disk", send_cfg, log, src, TransferOptions{});
  EXPECT_EQ(out.exit_code, kExitDiskFull) << out.message;
  EXPECT_EQ(out.message.find('\n'), std::string::npos) << out.message;
  const std::string said = "not enough space in the target directory: ";
  ASSERT_NE(out.message.find(said), std::string::npos) << out.message;
  // "… offered in the first N entries, …": N past the free space's 6144
  // files (and their directories), short of the whole tree's.
  const size_t at = out.message.find("in the first ");
  ASSERT_NE(at, std::string::npos) << out.message;
  const size_t entries = std::stoul(out.message.substr(at + 13));
  EXPECT_GT(entries, kFree / 1024);
  EXPECT_LT(entries, 3 * kWalkBatch + 8);
  EXPECT_EQ(r.stop(), kExitDiskFull);
  // Nothing stands under a final name: the tree's directory is staged.
  for (const auto& e : fs::directory_iterator(dst)) EXPECT_TRUE(e.path().filename().string().starts_with(".braid-")) << e.path();
  EXPECT_TRUE(nothing_outside());
}

// The disk fills up after the whole offer was accepted (its journal open):
// what arrived, early pieces included, stays for a resume; the next run
// (answered whole: a journal is there) finds the temporary files by the
// tag the journal names and sends only the rest.
class FullOnceJournaled : public DiskFaults {
 public:
  FullOnceJournaled(fs::path dst, uint64_t room) : dst_(std::move(dst)), room_(room) {}
  int before_write(uint64_t, size_t n) override {
    if (written_.fetch_add(n) + n <= room_) return 0;
    // Full only once the offer is whole and its journal open.
    for (int i = 0; i < 2000 && !journaled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return ENOSPC;
  }

 private:
  bool journaled() const {
    for (const auto& e : fs::directory_iterator(dst_))
      if (e.path().filename().string().starts_with(".braid-resume-")) return true;
    return false;
  }
  fs::path dst_;
  uint64_t room_;
  std::atomic<uint64_t> written_{0};
};

TEST_F(SessionFixture, AnInterruptedStreamedTransferAnsweredPartByPartResumes) {
  const fs::path src = tmp / "src/tree";
  make_streamed_tree(src, 3);
  TransferOptions opts;
  {
    RunningReceiver r(dst, recv_cfg, "resume9", false, 64, std::make_shared<FullOnceJournaled>(dst, 6 << 20));
    auto s = connect_ok(r.address(), send_cfg, "resume9", log);
    ASSERT_TRUE(s);
    Streamed walked;
    auto out = send_streamed(*s, src, opts, walked);
    s->close();
    EXPECT_EQ(out.exit_code, kExitDiskFull) << out.message;
    EXPECT_EQ(r.stop(), kExitDiskFull);
  }
  EXPECT_FALSE(fs::exists(dst / "tree"));
  size_t journals = 0;
  for (const auto& e : fs::directory_iterator(dst)) journals += e.path().filename().string().starts_with(".braid-resume-");
  EXPECT_EQ(journals, 1u);
  RunningReceiver again(dst, recv_cfg, "resume9");
  auto s = connect_ok(again.address(), send_cfg, std::nullopt, log);  // paired by the first run
  ASSERT_TRUE(s);
  Streamed walked;
  auto out = send_streamed(*s, src, opts, walked);
  s->close();
  ASSERT_EQ(out.exit_code, 0) << out.message;
  EXPECT_GT(out.report.resumed_bytes, uint64_t{1} << 20);   // what arrived before the disk filled up
  EXPECT_LE(out.report.resumed_bytes, uint64_t{6} << 20);  // never more than the disk took
  EXPECT_EQ(again.stop(), 0);
  EXPECT_TRUE(same_tree(src, dst / "tree"));
  for (const auto& e : fs::directory_iterator(dst))
    EXPECT_FALSE(e.path().filename().string().starts_with(".braid-resume-")) << e.path();
}

// A journal left by another tree's interrupted transfer does not hold a
// new tree's offer back: the journal records its origin (sender, first
// entry), so the receiver answers the new one part by part, and the old
// journal stays for its own resume.
TEST_F(SessionFixture, AJournalOfAnotherTreeDoesNotHoldANewTreesEarlyAnswersBack) {
  const fs::path first = tmp / "src/tree";
  make_streamed_tree(first, 3);
  {
    RunningReceiver r(dst, recv_cfg, "origin", false, 64, std::make_shared<FullOnceJournaled>(dst, 6 << 20));
    const auto out = send_streamed_to(r, "origin", send_cfg, log, first, TransferOptions{});
    ASSERT_EQ(out.exit_code, kExitDiskFull) << out.message;
    (void)r.stop();
  }
  std::vector<fs::path> journals;
  for (const auto& e : fs::directory_iterator(dst))
    if (e.path().filename().string().starts_with(".braid-resume-")) journals.push_back(e.path());
  ASSERT_EQ(journals.size(), 1u);
  const std::string kept = read_all(journals[0]);
  // Another tree, from the same sender (paired by the first run).
  // Its first entry is its top directory, another name than the first
  // tree's: another origin.
  const fs::path other = tmp / "src2/other";
  make_streamed_tree(other, 3);
  RunningReceiver r(dst, recv_cfg, "origin");
  const auto [out, walk] =
      send_holding_last_batch(r, "origin", send_cfg, log, other, dst, {}, std::chrono::seconds(20));
  ASSERT_EQ(out.exit_code, 0) << out.message;
  EXPECT_TRUE(walk->landed) << "the other tree's offer was answered whole";
  EXPECT_TRUE(same_tree(other, dst / "other"));
  // Another tree under the first one's name: its top directory's mtime
  // differs (names came and went in it), and so does its origin.
  const fs::path renamed = tmp / "src3/tree";
  make_streamed_tree(renamed, 3);
  fs::last_write_time(renamed, fs::last_write_time(first) + std::chrono::hours(1));
  const auto [out2, walk2] =
      send_holding_last_batch(r, "origin", send_cfg, log, renamed, dst, {}, std::chrono::seconds(20));
  ASSERT_EQ(out2.exit_code, 0) << out2.message;
  EXPECT_TRUE(walk2->landed) << "a tree under the same name was answered whole";
  EXPECT_EQ(r.stop(), 0);
  EXPECT_TRUE(same_tree(renamed, dst / "tree"));
  EXPECT_EQ(read_all(journals[0]), kept);  // the first tree's journal, untouched
}

// The lanes' first read of the source is held (a slow disk) until the test
// lets it go; every read notes whether the send call had returned by then.
class HeldRead : public ReadFaults {
 public:
  void before_read(uint64_t, uint64_t) override {
    std::unique_lock lock(mu_);
    reads_after_return_ += returned_;
    if (held_) return;  // only the first is held
    held_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return released_ || returned_; });
    reads_after_return_ += returned_;  // it goes on into the tree
  }
  bool wait_held() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_; });
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  void send_returned() {
    std::lock_guard lock(mu_);
    returned_ = true;
    cv_.notify_all();
  }
  bool returned() {
    std::lock_guard lock(mu_);
    return returned_;
  }
  int reads_after_return() {
    std::lock_guard lock(mu_);
    return reads_after_return_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false, released_ = false, returned_ = false;
  int reads_after_return_ = 0;
};

// A transfer interrupted while a lane is inside a read of the source: send()
// returns only once that read is over, and no lane reads the tree after it
// (the caller frees it at once). Before SourceReader::retire, send() came
// back with the read still going, into a tree about to be freed (a segfault
// in a full-suite run).
TEST_F(SessionFixture, NoLaneReadsTheSourceAfterSendReturns) {
  testing::write_random_file(tmp / "src/a.bin", 4 << 20, 9);
  RunningReceiver r(dst, recv_cfg, "held-read");
  auto s = connect_ok(r.address(), send_cfg, "held-read", log);
  ASSERT_TRUE(s);
  auto held = std::make_shared<HeldRead>();
  TransferOptions opts;
  opts.chunk_size = 256 << 10;
  opts.read_faults = held;
  TransferOutcome out;
  std::thread sender([&] {
    auto tree = std::make_unique<files::SourceTree>(scan({tmp / "src/a.bin"}));
    out = s->send(*tree, opts);
    held->send_returned();
    tree.reset();  // as any caller may, the moment send() returns
  });
  EXPECT_TRUE(held->wait_held());
  s->interrupt("stopped by the test");
  // The transfer has ended; send() must still wait for the read in flight.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(held->returned()) << "send() returned while a lane was inside a read of its tree";
  held->release();
  sender.join();
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.message.find("stopped by the test"), std::string::npos) << out.message;
  EXPECT_EQ(held->reads_after_return(), 0);
  s->close();
}

}  // namespace
}  // namespace braid::transfer
