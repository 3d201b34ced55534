// The receiver's limits in one process, with short deadlines (ReceiveLimits)
// and faults through its interfaces: a silent connection and a trickled
// handshake are cut at their deadlines, the oldest waiting connection makes
// room, threads do not grow with connections, a session that gets no thread
// or exceeds --max-sessions is refused and the receiver goes on, a finished
// session gives back its threads and fds, stop() does not wait on handshakes.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include "engine/files/source_tree.hpp"
#include "engine/transfer/receiver.hpp"
#include "engine/transfer/sender_session.hpp"
#include "test_dirs.hpp"

namespace braid::transfer {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

int threads_now() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

int fds_now() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n - 1;  // the iterator's own
}

/// Waits up to `limit` for `pred`; true if it held.
template <class P>
bool eventually(P pred, std::chrono::milliseconds limit = 5000ms) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

/// A plain TCP connection to 127.0.0.1:port (the test's side); -1 on failure.
int dial(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// How long until the peer closes `fd` (EOF or reset), at most `limit`; nullopt if it stays open.
std::optional<std::chrono::milliseconds> closed_within(int fd, std::chrono::milliseconds limit) {
  const auto start = Clock::now();
  for (;;) {
    const auto left = limit - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (left <= 0ms) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char c;
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    if (n <= 0) return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  }
}

class LimitedReceiver {
 public:
  LimitedReceiver(const fs::path& dir, const fs::path& config, ReceiveOptions o) {
    o.dir = dir.string();
    o.listen = {"127.0.0.1:0"};
    o.code = "pair-me";
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
  ~LimitedReceiver() { stop(); }
  void stop() {
    if (!r_ || !thread_.joinable()) return;
    r_->stop();
    thread_.join();
  }
  uint16_t port() const { return r_->listening()[0].port(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port()); }
  Receiver& get() { return *r_; }
  bool ok() const { return r_ != nullptr; }

 private:
  EventLog log_;
  std::unique_ptr<Receiver> r_;
  std::thread thread_;
  int exit_code_ = -1;
};

struct ReceiverLimits : ::testing::Test {
  testing::ScratchDir tmp;
  fs::path dst = tmp / "dst";
  fs::path recv_cfg = tmp / "recv-config";
  fs::path send_cfg = tmp / "send-config";
  EventLog log;

  std::variant<std::unique_ptr<SenderSession>, Failure> connect(const std::string& address) {
    ConnectOptions co;
    co.remote = address;
    co.code = "pair-me";
    co.streams = 2;
    co.config_dir = send_cfg;
    return SenderSession::connect(co, log);
  }
  int send_one(const std::string& address, const std::string& name) {
    testing::write_random_file(tmp / "src" / name, 200'000, name.size());
    auto c = connect(address);
    if (auto* f = std::get_if<Failure>(&c)) {
      ADD_FAILURE() << "connect: " << f->message;
      return -1;
    }
    auto& s = std::get<0>(c);
    auto scan = files::scan_sources({(tmp / "src" / name).string()});
    EXPECT_TRUE(scan.ok()) << scan.error;
    auto out = s->send(scan.tree, TransferOptions{});
    s->close();
    return out.exit_code;
  }
};

TEST_F(ReceiverLimits, ASilentConnectionIsClosedAtItsFirstBytesDeadline) {
  ReceiveOptions o;
  o.limits.first_bytes = 300ms;
  LimitedReceiver r(dst, recv_cfg, o);
  ASSERT_TRUE(r.ok());
  const int fd = dial(r.port());
  ASSERT_GE(fd, 0);
  const auto closed = closed_within(fd, 3000ms);
  ::close(fd);
  ASSERT_TRUE(closed) << "a connection that never spoke was kept over 3 s";
  EXPECT_GE(closed->count(), 250);
  EXPECT_TRUE(eventually([&] { return r.get().connection_stats().timed_out == 1; }));
}

TEST_F(ReceiverLimits, AHandshakeTrickledAByteAtATimeIsCutAtItsDeadline) {
  ReceiveOptions o;
  o.limits.handshake = 600ms;
  LimitedReceiver r(dst, recv_cfg, o);
  ASSERT_TRUE(r.ok());
  const int fd = dial(r.port());
  ASSERT_GE(fd, 0);
  // A TLS record header, then one byte every 100 ms: each read of the
  // handshake is quick, the whole never ends.
  const uint8_t record[] = {0x16, 0x03, 0x01, 0x02, 0x00};
  ASSERT_EQ(::send(fd, record, sizeof record, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof record));
  const auto start = Clock::now();
  std::optional<std::chrono::milliseconds> closed;
  while (!closed && Clock::now() - start < 5s) {
    const uint8_t b = 0;
    (void)::send(fd, &b, 1, MSG_NOSIGNAL);
    closed = closed_within(fd, 100ms);
  }
  ::close(fd);
  ASSERT_TRUE(closed) << "the handshake was still going after 5 s";
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_LT(took.count(), 2000) << "a 600 ms handshake deadline (+ the loop's 250 ms tick)";
  EXPECT_TRUE(eventually([&] { return r.get().connection_stats().sessions_refused == 1; }));
}

TEST_F(ReceiverLimits, TheOldestWaitingConnectionMakesRoomWhenThePendingSetIsFull) {
  ReceiveOptions o;
  o.limits.max_pending = 4;
  LimitedReceiver r(dst, recv_cfg, o);
  ASSERT_TRUE(r.ok());
  std::vector<int> fds;
  for (int i = 0; i < 10; ++i) {
    fds.push_back(dial(r.port()));
    ASSERT_GE(fds.back(), 0);
    std::this_thread::sleep_for(20ms);  // accepted in this order
  }
  // The six oldest are dropped, the four newest still wait.
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(closed_within(fds[i], 2000ms)) << "connection " << i;
  for (int i = 6; i < 10; ++i) EXPECT_FALSE(closed_within(fds[i], 100ms)) << "connection " << i;
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(r.get().connection_stats().dropped_pending_full, 6u);
}

TEST_F(ReceiverLimits, ThreadsDoNotGrowWithConnections) {
  LimitedReceiver r(dst, recv_cfg, ReceiveOptions{});
  ASSERT_TRUE(r.ok());
  std::this_thread::sleep_for(100ms);
  const int before = threads_now();
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) {
    fds.push_back(dial(r.port()));
    ASSERT_GE(fds.back(), 0);
  }
  // And some that say they are TLS, then nothing: they reach the handshake stage.
  const uint8_t hello = 0x16;
  for (int i = 0; i < 20; ++i) {
    fds.push_back(dial(r.port()));
    ASSERT_GE(fds.back(), 0);
    (void)::send(fds.back(), &hello, 1, MSG_NOSIGNAL);
  }
  EXPECT_TRUE(eventually([&] { return r.get().connection_stats().accepted == 320; }));
  EXPECT_EQ(threads_now(), before) << "a thread per connection";
  for (int fd : fds) ::close(fd);
}

TEST_F(ReceiverLimits, ASessionThatGetsNoThreadIsRefusedAndTheReceiverGoesOn) {
  ReceiveOptions o;
  // The handshake workers start first; the next thread is the first
  // session's, and the system has none to give (what std::thread throws).
  auto calls = std::make_shared<std::atomic<int>>(0);
  const int workers = static_cast<int>(o.limits.handshake_workers);
  o.start_thread = [calls, workers](std::function<void()> body) {
    if (calls->fetch_add(1) == workers) throw std::system_error(EAGAIN, std::generic_category(), "thread");
    return std::thread(std::move(body));
  };
  LimitedReceiver r(dst, recv_cfg, o);
  ASSERT_TRUE(r.ok());
  auto refused = connect(r.address());
  ASSERT_TRUE(std::holds_alternative<Failure>(refused)) << "a session without a control thread";
  EXPECT_TRUE(eventually([&] { return r.get().connection_stats().sessions_refused == 1; }));
  EXPECT_EQ(send_one(r.address(), "after.bin"), 0);
  EXPECT_EQ(testing::read_file(dst / "after.bin"), testing::read_file(tmp / "src/after.bin"));
}

TEST_F(ReceiverLimits, SessionsBeyondMaxSessionsAreRefusedUntilOneEnds) {
  ReceiveOptions o;
  o.max_sessions = 1;
  LimitedReceiver r(dst, recv_cfg, o);
  ASSERT_TRUE(r.ok());
  auto first = connect(r.address());
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<SenderSession>>(first));
  auto second = connect(r.address());
  ASSERT_TRUE(std::holds_alternative<Failure>(second)) << "two sessions with --max-sessions 1";
  EXPECT_TRUE(eventually([&] { return r.get().connection_stats().sessions_refused == 1; }));
  std::get<0>(first)->close();
  std::get<0>(first).reset();
  // The slot comes back when the first session has ended on the receiver.
  bool third_ok = eventually(
      [&] {
        auto c = connect(r.address());
        if (auto* s = std::get_if<std::unique_ptr<SenderSession>>(&c)) {
          (*s)->close();
          return true;
        }
        return false;
      },
      3000ms);
  EXPECT_TRUE(third_ok);
}

TEST_F(ReceiverLimits, AFinishedSessionGivesBackItsThreadsAndFds) {
  LimitedReceiver r(dst, recv_cfg, ReceiveOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(send_one(r.address(), "warm.bin"), 0);  // one-time allocations (identity, TLS) out of the way
  std::this_thread::sleep_for(100ms);
  const int threads = threads_now(), fds = fds_now();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(send_one(r.address(), "f" + std::to_string(i) + ".bin"), 0);
  EXPECT_TRUE(eventually([&] { return threads_now() <= threads && fds_now() <= fds; }, 3000ms))
      << "threads " << threads_now() << " (before " << threads << "), fds " << fds_now() << " (before " << fds << ")";
  EXPECT_EQ(r.get().reports().size(), 6u);  // the reports stay
}

TEST_F(ReceiverLimits, StopDoesNotWaitForHandshakesInProgress) {
  LimitedReceiver r(dst, recv_cfg, ReceiveOptions{});  // a 10 s handshake deadline
  ASSERT_TRUE(r.ok());
  std::vector<int> fds;
  const uint8_t hello = 0x16;
  for (int i = 0; i < 8; ++i) {
    fds.push_back(dial(r.port()));
    ASSERT_GE(fds.back(), 0);
    (void)::send(fds.back(), &hello, 1, MSG_NOSIGNAL);
  }
  std::this_thread::sleep_for(200ms);  // some are in the workers now
  const auto start = Clock::now();
  r.stop();
  EXPECT_LT(Clock::now() - start, 2s);
  for (int fd : fds) ::close(fd);
}

}  // namespace
}  // namespace braid::transfer
