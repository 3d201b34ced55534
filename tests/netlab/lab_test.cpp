// Real labs (root): iperf3 and ping across the emulator must see the rate
// within ±5 % and the RTT within ±1 ms of the settings; events and teardown
// must do what docs/netlab.md says.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include <unistd.h>

#include "lab_harness.hpp"

namespace netlab::test {
namespace {

#define SKIP_UNLESS_LAB_CAN_RUN(...)                              \
  do {                                                            \
    const std::string why = lab_skip_reason({__VA_ARGS__});       \
    if (!why.empty()) GTEST_SKIP() << "lab test skipped: " << why; \
  } while (0)

// TCP payload per 1500-byte IP packet: 20 bytes of IP and 32 of TCP with
// timestamps. The link rate counts whole IP packets, iperf3 counts payload.
constexpr double kGoodputPerWireByte = 1448.0 / 1500.0;

nlohmann::json parse_json(const CommandResult& r) {
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << r.output;
  return j;
}

struct PingSummary {
  double min_ms = 0, avg_ms = 0, max_ms = 0;
  double median_ms = 0;
  std::set<int> replied;  // icmp_seq numbers that came back
};

PingSummary parse_ping(const std::string& output) {
  PingSummary s;
  std::smatch m;
  if (std::regex_search(output, m, std::regex(R"(= ([0-9.]+)/([0-9.]+)/([0-9.]+)/)"))) {
    s.min_ms = std::stod(m[1]);
    s.avg_ms = std::stod(m[2]);
    s.max_ms = std::stod(m[3]);
  }
  const std::regex reply(R"(icmp_seq=([0-9]+) .*time=([0-9.]+) ms)");
  std::vector<double> rtts;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), reply); it != std::sregex_iterator(); ++it) {
    s.replied.insert(std::stoi((*it)[1]));
    rtts.push_back(std::stod((*it)[2]));
  }
  if (!rtts.empty()) {
    std::sort(rtts.begin(), rtts.end());
    s.median_ms = rtts[rtts.size() / 2];
  }
  return s;
}

TEST(Lab, RateIsWithinFivePercentOfTheSetting) {
  SKIP_UNLESS_LAB_CAN_RUN("iperf3");
  Lab lab("rate");
  const auto up = lab.up("--link 'L:rate=100Mbit,delay=5ms'");
  ASSERT_EQ(up.exit_code, 0) << up.output;
  const double ceiling = 100.0 * kGoodputPerWireByte;
  // Too fast is the emulator's fault whatever the host does, so every run
  // must stay under the ceiling. Too slow can be the host's: iperf3 and the
  // emulator share two cores with whatever else runs, and one starved second
  // costs a 4 s run 5 %. An emulator that really loses rate loses it in every
  // run, so the lower bound is judged on the best of up to three.
  double best = 0;
  for (int run = 1; run <= 3 && best <= ceiling * 0.95; ++run) {
    const auto j = parse_json(iperf3(lab, "10.77.1.2", "-t 4 -O 1"));
    ASSERT_FALSE(j.contains("error")) << j.dump(2);
    const double mbit = j["end"]["sum_received"]["bits_per_second"].get<double>() / 1e6;
    std::printf("run %d: iperf3 over rate=100Mbit: %.2f Mbit/s of TCP payload = %.1f %% of the %.2f Mbit/s a "
                "100 Mbit/s IP link can carry (%.2f Mbit/s at the IP layer)\n",
                run, mbit, 100 * mbit / ceiling, ceiling, mbit / kGoodputPerWireByte);
    EXPECT_LT(mbit, ceiling * 1.05) << "run " << run;
    best = std::max(best, mbit);
  }
  EXPECT_GT(best, ceiling * 0.95) << "the best of three runs";
}

TEST(Lab, RateDiffersPerDirection) {
  SKIP_UNLESS_LAB_CAN_RUN("iperf3");
  Lab lab("asym");
  const auto up = lab.up("--link 'L:up.rate=40Mbit,down.rate=10Mbit,delay=2ms'");
  ASSERT_EQ(up.exit_code, 0) << up.output;
  const auto j = parse_json(iperf3(lab, "10.77.1.2", "-t 3 -O 1 -R"));  // -R: rcv sends, over "down"
  ASSERT_FALSE(j.contains("error")) << j.dump(2);
  const double mbit = j["end"]["sum_received"]["bits_per_second"].get<double>() / 1e6;
  std::printf("iperf3 -R over down.rate=10Mbit: %.2f Mbit/s\n", mbit);
  EXPECT_NEAR(mbit, 10.0 * kGoodputPerWireByte, 0.5);
}

TEST(Lab, RttIsTwiceTheDelayWithinOneMillisecond) {
  SKIP_UNLESS_LAB_CAN_RUN();
  Lab lab("rtt");
  const auto up = lab.up("--link 'L:rate=100Mbit,delay=10ms'");
  ASSERT_EQ(up.exit_code, 0) << up.output;
  for (const char* target : {"10.77.1.2", "fd77:1::2"}) {
    const auto ping = lab.exec("snd", std::string("ping -n -c 20 -i 0.05 ") + target);
    ASSERT_EQ(ping.exit_code, 0) << ping.output;
    const PingSummary s = parse_ping(ping.output);
    std::printf("ping %s over delay=10ms: rtt min/median/avg/max %.3f/%.3f/%.3f/%.3f ms\n", target, s.min_ms,
                s.median_ms, s.avg_ms, s.max_ms);
    // The median: on a shared machine one ping in 20 can wait tens of ms for
    // a core (the kernel is PREEMPT_NONE), and the mean would report that.
    EXPECT_NEAR(s.median_ms, 20.0, 1.0) << target << "\n" << ping.output;
    EXPECT_GE(s.min_ms, 20.0) << target << ": the link must never be faster than its delay";
  }
}

TEST(Lab, OutageDropsTrafficThenLinkRecovers) {
  SKIP_UNLESS_LAB_CAN_RUN();
  Lab lab("outage");
  const auto up = lab.up("--link 'L:delay=1ms'");
  ASSERT_EQ(up.exit_code, 0) << up.output;
  // 80 pings, one every 50 ms; a 1 s outage starts about 1 s in. Timing the
  // event from the same shell as ping keeps it inside the 4 s of pinging
  // even when the machine is busy and commands start slowly.
  const std::string out = "/tmp/" + lab.prefix() + ".ping";
  std::string both = "(";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "(" + std::string
  both += lab.command() + " exec snd ping -n -c 80 -i 0.05 -W 1 10.77.1.2 >" + out + " 2>&1 & sleep 1; ";
  both += lab.command() + " event 'link=L,outage=1s'; wait)";
  sh(both);
  const std::string ping = sh("cat " + out + "; rm -f " + out).output;
  const PingSummary s = parse_ping(ping);
  std::printf("outage of 1 s during 80 pings at 50 ms: %zu replies, %zu lost\n", s.replied.size(),
              80 - s.replied.size());
  EXPECT_GE(80 - s.replied.size(), 14u) << ping;  // about 20 fall into the outage
  EXPECT_LE(80 - s.replied.size(), 26u) << ping;
  for (int seq : {1, 2, 3, 4, 5}) EXPECT_TRUE(s.replied.count(seq)) << "before the outage, seq " << seq << "\n" << ping;
  for (int seq = 75; seq <= 80; ++seq) EXPECT_TRUE(s.replied.count(seq)) << "after the outage, seq " << seq << "\n" << ping;
  const auto stats = parse_json(lab.netlab("stats --json"));
  EXPECT_GE(stats["links"][0]["up"]["drops"]["outage"].get<int>(), 14) << stats.dump(2);
  EXPECT_FALSE(stats["links"][0]["up"]["settings"]["dark"].get<bool>());
}

TEST(Lab, RateChangeEventTakesEffect) {
  SKIP_UNLESS_LAB_CAN_RUN("iperf3");
  Lab lab("ratechange");
  const auto up = lab.up("--link 'L:rate=100Mbit,delay=2ms'");
  ASSERT_EQ(up.exit_code, 0) << up.output;
  // The receiver's per-second figures (the sender's count writes into a
  // socket buffer that absorbs the change for a while).
  const auto j = parse_json(iperf3(lab, "10.77.1.2", "-t 7 -i 1 --get-server-output",
                                   "sleep 2.5; " + lab.command() + " event 'link=L,rate=20Mbit'"));
  ASSERT_FALSE(j.contains("error")) << j.dump(2);
  const auto& intervals = j["server_output_json"]["intervals"];
  ASSERT_GE(intervals.size(), 7u) << j.dump(2);
  auto mbit = [&](int i) { return intervals[i]["sum"]["bits_per_second"].get<double>() / 1e6; };
  std::printf("receiver's per-second rates: %.1f %.1f %.1f %.1f %.1f %.1f %.1f Mbit/s (100 -> 20 Mbit/s at ~2.5 s)\n",
              mbit(0), mbit(1), mbit(2), mbit(3), mbit(4), mbit(5), mbit(6));
  // Before: near the full rate (RateIsWithinFivePercentOfTheSetting checks
  // it precisely). After: the new rate, within 5 %.
  EXPECT_GT((mbit(0) + mbit(1)) / 2, 100 * kGoodputPerWireByte * 0.85);
  EXPECT_NEAR((mbit(4) + mbit(5) + mbit(6)) / 3, 20 * kGoodputPerWireByte, 20 * kGoodputPerWireByte * 0.05);
}

TEST(Lab, EachLinkIsItsOwnSubnetAndNothingLeaksToTheHost) {
  SKIP_UNLESS_LAB_CAN_RUN();
  Lab lab("subnets");
  const auto up = lab.up("--link A --link B");
  ASSERT_EQ(up.exit_code, 0) << up.output;
  const auto before = parse_json(lab.netlab("stats --json"));
  ASSERT_EQ(lab.exec("snd", "ping -n -q -c 5 -i 0.01 10.77.2.2").exit_code, 0);
  const auto after = parse_json(lab.netlab("stats --json"));
  auto rx = [](const nlohmann::json& j, int link) { return j["links"][link]["up"]["rx_packets"].get<int>(); };
  EXPECT_EQ(rx(after, 0) - rx(before, 0), 0) << "traffic to 10.77.2.2 must not cross link 1";
  EXPECT_GE(rx(after, 1) - rx(before, 1), 5);
  // The lab adds nothing to the namespace it was started from.
  EXPECT_EQ(sh("ip -o addr | grep -c '10\\.77\\.' || true").output, "0\n");
  EXPECT_EQ(sh("ip route | grep -c '10\\.77\\.' || true").output, "0\n");
  EXPECT_NE(sh("ip link show nl-A").exit_code, 0);
}

TEST(Lab, TraceShowsEachPacketEnteringAndLeavingAfterTheDelay) {
  SKIP_UNLESS_LAB_CAN_RUN("bash");
  Lab lab("trace");
  const std::string trace = "/tmp/" + lab.prefix() + ".trace";
  struct Cleanup {
    std::string path;
    ~Cleanup() { std::remove(path.c_str()); }
  } cleanup{trace};
  const auto up = lab.up("--trace " + trace + " --link 'L:delay=5ms'");
  ASSERT_EQ(up.exit_code, 0) << up.output;
  // Five UDP datagrams to a port of their own (a ping's packets could not be
  // told from the kernel's own ICMPv6 chatter, which the trace also sees).
  const auto sent = lab.exec("snd", "bash -c 'for i in 1 2 3 4 5; do echo x$i >/dev/udp/10.77.1.2/9999; sleep 0.05; done'");
  ASSERT_EQ(sent.exit_code, 0) << sent.output;
  ASSERT_EQ(lab.down().exit_code, 0);  // the emulator flushes the trace as it stops
  const std::string text = sh("cat " + trace).output;
  ASSERT_EQ(text.rfind("# netlab-emu packet trace", 0), 0u) << text.substr(0, 200);
  // "TIME_US EVENT LINK DIR PROTO SPORT DPORT SEQ ACK LEN FLAGS": each
  // datagram enters going up and leaves at least the delay later.
  std::vector<long long> in, out;
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    std::istringstream w(line);
    long long t = 0;
    std::string event, link, dir, proto, sport, dport, seq, ack, len;
    w >> t >> event >> link >> dir >> proto >> sport >> dport >> seq >> ack >> len;
    if (proto != "udp" || dport != "9999") continue;
    EXPECT_EQ(link, "0") << line;
    EXPECT_EQ(dir, "up") << line;
    EXPECT_EQ(len, "3") << line;  // "xN\n"
    (event == "i" ? in : out).push_back(t);
  }
  ASSERT_EQ(in.size(), 5u) << text;
  ASSERT_EQ(out.size(), 5u) << text;
  for (size_t i = 0; i < in.size(); ++i) EXPECT_GE(out[i] - in[i], 5000) << "datagram " << i << "\n" << text;
}

TEST(Lab, DownCleansUpAfterACrash) {
  SKIP_UNLESS_LAB_CAN_RUN();
  Lab lab("crash");
  const auto up = lab.up("--link 'L:delay=1ms'");
  ASSERT_EQ(up.exit_code, 0) << up.output;
  const std::string state = "/run/netlab/" + lab.prefix();
  const auto pid = sh("cat " + state + "/emu.pid").output;
  ASSERT_FALSE(pid.empty());
  // A server left behind in the lab, then the emulator dies without cleaning up.
  const auto stray = lab.exec("rcv", "sleep 600 >/dev/null 2>&1 & echo $!");
  ASSERT_EQ(stray.exit_code, 0) << stray.output;
  ASSERT_EQ(sh("kill -KILL " + pid).exit_code, 0);
  usleep(100'000);
  EXPECT_NE(lab.netlab("status").output.find("NOT RUNNING"), std::string::npos);

  const auto down = lab.down();
  EXPECT_EQ(down.exit_code, 0) << down.output;
  EXPECT_EQ(sh("ip netns list | grep -c " + lab.prefix() + " || true").output, "0\n");
  EXPECT_NE(sh("test -e " + state).exit_code, 0);
  // Gone, or a zombie waiting to be reaped: either way, no longer running.
  const auto state_letter = sh("sed 's/.*) //' /proc/" + stray.output.substr(0, stray.output.size() - 1) +
                               "/stat 2>/dev/null | cut -c1");
  EXPECT_TRUE(state_letter.output.empty() || state_letter.output == "Z\n") << state_letter.output;
  EXPECT_EQ(lab.down().exit_code, 0) << "down must be idempotent";
}

}  // namespace
}  // namespace netlab::test
