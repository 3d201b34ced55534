// The pure DNS-SD/mDNS core in virtual time: the codec (names, compression,
// bounds), the responder (probing, announcing, answers, known-answer
// suppression, goodbye) and the browser (query backoff, cache, goodbye),
// and a responder and a browser talking over a simulated link.
#include <gtest/gtest.h>

#include "core/discovery/dns_message.hpp"
#include "core/discovery/mdns.hpp"

namespace braid::discovery {
namespace {

const Link kLink4{3, false};
const Link kLink6{3, true};
const PeerAddress kOther{IpAddress::v4({10, 0, 0, 9}), kMdnsPort};

Time at_ms(int64_t ms) { return Time::zero() + Duration::millis(ms); }

ResponderConfig responder_config() {
  ResponderConfig c;
  c.instance = "lab-rcv";
  c.host = DnsName::of({"braid-1a2b3c4d", "local"});
  c.port = 7878;
  c.txt = {"v=1", "n=4711", "fp=SHA256:abc"};
  c.interfaces = {{3, {IpAddress::v4({10, 0, 1, 2}), IpAddress::v6_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})}}};
  c.seed = 7;
  return c;
}

std::vector<Transmit> drain(Responder& r) {
  std::vector<Transmit> out;
  while (auto t = r.poll_transmit()) out.push_back(std::move(*t));
  return out;
}
std::vector<Transmit> drain(Browser& b) {
  std::vector<Transmit> out;
  while (auto t = b.poll_transmit()) out.push_back(std::move(*t));
  return out;
}

// Runs the responder alone until it has announced (probes go unanswered).
Time run_until_announced(Responder& r, Time now) {
  for (int i = 0; i < 100 && r.state() != Responder::State::announced; ++i) {
    now = std::max(now, r.poll_timeout());
    r.handle_timeout(now);
    drain(r);
  }
  return now;
}

// Announced, both announcements sent, and more than a second since: the
// next multicast answer is not held back by RFC 6762 6's once-a-second rule.
Time settled(Responder& r) {
  Time now = run_until_announced(r, Time::zero()) + Duration::seconds(5);
  r.handle_timeout(now);
  drain(r);
  return now + Duration::seconds(2);
}

Message decoded(const std::vector<uint8_t>& bytes) {
  auto d = decode(bytes);
  EXPECT_TRUE(d.message.has_value()) << decode_error_name(d.error);
  return d.message.value_or(Message{});
}

// --- codec ------------------------------------------------------------------

TEST(DnsMessage, RoundTripsEveryRecordKind) {
  Message m;
  m.id = 0x1234;
  m.flags = 0x8400;
  m.questions.push_back({braid_service_type(), 12, true, kClassIn});
  Record ptr;
  ptr.name = braid_service_type();
  ptr.type = 12;
  ptr.ttl = 4500;
  ptr.data = DnsName::of({"my box.with dots", "_braid", "_tcp", "local"});
  Record srv;
  srv.name = DnsName::of({"x", "_braid", "_tcp", "local"});
  srv.type = 33;
  srv.cache_flush = true;
  srv.ttl = 120;
  srv.data = SrvData{1, 2, 7878, DnsName::of({"h", "local"})};
  Record txt = srv;
  txt.type = 16;
  txt.data = std::vector<std::string>{"v=1", "n=4711"};
  Record a = srv;
  a.type = 1;
  a.data = std::array<uint8_t, 4>{10, 1, 2, 3};
  m.answers = {ptr, srv};
  m.additionals = {txt, a};
  const auto back = decoded(encode(m));
  EXPECT_EQ(back.id, 0x1234);
  EXPECT_TRUE(back.is_response());
  ASSERT_EQ(back.questions.size(), 1u);
  EXPECT_TRUE(back.questions[0].unicast_response);
  ASSERT_EQ(back.answers.size(), 2u);
  EXPECT_EQ(std::get<DnsName>(back.answers[0].data).labels[0], "my box.with dots");
  EXPECT_FALSE(back.answers[0].cache_flush);
  EXPECT_TRUE(back.answers[1].cache_flush);
  EXPECT_EQ(std::get<SrvData>(back.answers[1].data).port, 7878);
  ASSERT_EQ(back.additionals.size(), 2u);
  EXPECT_EQ(std::get<std::vector<std::string>>(back.additionals[0].data)[1], "n=4711");
  EXPECT_TRUE(back.additionals[1].same_rr(a));
}

TEST(DnsMessage, NamesCompareCaseInsensitively) {
  EXPECT_TRUE(DnsName::of({"_BRAID", "_tcp", "Local"}) == braid_service_type());
  EXPECT_FALSE(DnsName::of({"_braid", "_udp", "local"}) == braid_service_type());
  EXPECT_TRUE(DnsName::of({"x", "_braid", "_tcp", "local"}).ends_with(braid_service_type()));
}

// Header, then a question "a.local" at 12, then an answer whose name is a pointer to it.
std::vector<uint8_t> compressed_packet() {
  return {0, 0, 0x84, 0, 0, 1, 0, 1, 0, 0, 0, 0,
          1, 'a', 5, 'l', 'o', 'c', 'a', 'l', 0, 0, 1, 0, 1,
          0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 120, 0, 4, 10, 0, 0, 1};
}

TEST(DnsMessage, DecodesCompressedNames) {
  const auto m = decoded(compressed_packet());
  ASSERT_EQ(m.answers.size(), 1u);
  EXPECT_EQ(m.answers[0].name.str(), "a.local");
  EXPECT_TRUE(m.answers[0].same_rr(m.answers[0]));
}

TEST(DnsMessage, RefusesPointerLoopsAndForwardPointers) {
  auto p = compressed_packet();
  p[26] = 25;  // the answer's name points at itself
  EXPECT_EQ(decode(p).error, DecodeError::pointer_loop);
  p[26] = 30;  // forwards
  EXPECT_EQ(decode(p).error, DecodeError::pointer_loop);
  // Two labels pointing at each other through earlier bytes: bounded by the jump count or the name size.
  std::vector<uint8_t> q = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 0xC0, 12, 0, 1, 0, 1};
  EXPECT_FALSE(decode(q).message.has_value());
}

TEST(DnsMessage, RefusesHostileShapes) {
  EXPECT_EQ(decode(std::vector<uint8_t>(5, 0)).error, DecodeError::too_short);
  EXPECT_EQ(decode(std::vector<uint8_t>(kMaxPacket + 1, 0)).error, DecodeError::too_long);
  // 65535 answers claimed in 12 bytes.
  std::vector<uint8_t> many = {0, 0, 0x84, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0};
  EXPECT_EQ(decode(many).error, DecodeError::too_many_records);
  // 200 answers claimed, none present: refused before any is read.
  std::vector<uint8_t> claimed = {0, 0, 0x84, 0, 0, 0, 0, 200, 0, 0, 0, 0};
  EXPECT_EQ(decode(claimed).error, DecodeError::too_short);
  // A name longer than 255 bytes.
  std::vector<uint8_t> longname = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 5; ++i) {
    longname.push_back(60);
    longname.insert(longname.end(), 60, 'x');
  }
  longname.insert(longname.end(), {0, 0, 1, 0, 1});
  EXPECT_EQ(decode(longname).error, DecodeError::bad_name);
  // Reserved label type 0x80.
  std::vector<uint8_t> reserved = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 1, 0, 1};
  EXPECT_EQ(decode(reserved).error, DecodeError::bad_name);
  // An A record with 5 bytes of rdata; rdlength past the end.
  auto p = compressed_packet();
  p[36] = 5;
  p.push_back(0);
  EXPECT_EQ(decode(p).error, DecodeError::bad_record);
  p = compressed_packet();
  p[36] = 40;
  EXPECT_EQ(decode(p).error, DecodeError::bad_record);
  // A TXT string running past its record.
  std::vector<uint8_t> txt = {0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 16, 0, 1, 0, 0, 0, 1, 0, 2, 5, 'a'};
  EXPECT_EQ(decode(txt).error, DecodeError::bad_record);
}

TEST(DnsMessage, EveryTruncationIsRefusedWithoutCrash) {
  const auto full = encode([&] {
    Message q;
    q.questions.push_back({braid_service_type(), 12, false, kClassIn});
    return q;
  }());
  EXPECT_TRUE(decode(full).message.has_value());
  for (size_t n = 0; n < full.size(); ++n)
    EXPECT_FALSE(decode(std::span(full).first(n)).message.has_value()) << n;
}

// --- responder --------------------------------------------------------------

TEST(Responder, ProbesThreeTimesThenAnnouncesTwiceASecondApart) {
  Responder r(responder_config(), Time::zero());
  std::vector<std::pair<Time, Message>> sent;
  Time now = Time::zero();
  for (int i = 0; i < 20 && now < at_ms(4000); ++i) {
    now = r.poll_timeout();
    if (now == Time::never()) break;
    r.handle_timeout(now);
    for (auto& t : drain(r))
      if (t.link == kLink4) sent.emplace_back(now, decoded(t.bytes));
  }
  ASSERT_EQ(sent.size(), 5u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(sent[i].second.is_response());
    EXPECT_EQ(sent[i].second.questions.at(0).type, 255);
    EXPECT_TRUE(sent[i].second.questions.at(0).unicast_response);
    EXPECT_FALSE(sent[i].second.authorities.empty());
  }
  EXPECT_LE(sent[0].first, at_ms(250));
  EXPECT_EQ(sent[1].first - sent[0].first, Duration::millis(250));
  EXPECT_EQ(sent[2].first - sent[1].first, Duration::millis(250));
  EXPECT_TRUE(sent[3].second.is_response());
  EXPECT_EQ(sent[4].first - sent[3].first, Duration::seconds(1));
  // The announcement: PTR, SRV, TXT and the interface's A and AAAA.
  const auto& ann = sent[3].second;
  EXPECT_EQ(ann.answers.size(), 5u);
  bool txt_ok = false;
  for (const auto& rec : ann.answers)
    if (rec.type == 16) txt_ok = std::get<std::vector<std::string>>(rec.data) == responder_config().txt;
  EXPECT_TRUE(txt_ok);
  EXPECT_EQ(r.state(), Responder::State::announced);
}

TEST(Responder, RenamesWhenSomeoneAnswersForItsNameWhileProbing) {
  Responder r(responder_config(), Time::zero());
  r.handle_timeout(r.poll_timeout());
  drain(r);
  Message taken;
  taken.flags = 0x8400;
  Record srv;
  srv.name = DnsName::of({"lab-rcv", "_braid", "_tcp", "local"});
  srv.type = 33;
  srv.ttl = 120;
  srv.data = SrvData{0, 0, 9999, DnsName::of({"other", "local"})};
  taken.answers.push_back(srv);
  r.handle_packet(encode(taken), kOther, kLink4, at_ms(300));
  EXPECT_EQ(r.instance(), "lab-rcv (2)");
  run_until_announced(r, at_ms(300));
  EXPECT_EQ(r.state(), Responder::State::announced);
}

TEST(Responder, ASecondReceiverWithTheSameNameHearsTheFirstAnswerItsProbeAndRenames) {
  Responder first(responder_config(), Time::zero());
  Time now = settled(first);
  auto cfg = responder_config();
  cfg.port = 7879;
  cfg.seed = 99;
  Responder second(cfg, now);
  for (int i = 0; i < 40 && second.state() != Responder::State::announced; ++i) {
    now = std::min(first.poll_timeout(), second.poll_timeout());
    first.handle_timeout(now);
    second.handle_timeout(now);
    for (int round = 0; round < 3; ++round) {
      for (auto& t : drain(second))
        if (t.link == kLink4) first.handle_packet(t.bytes, kOther, kLink4, now);
      for (auto& t : drain(first)) {
        ASSERT_FALSE(t.unicast_to.has_value());  // a probe's QU answered by multicast: every process on 5353 hears it
        if (t.link == kLink4) second.handle_packet(t.bytes, {IpAddress::v4({10, 0, 1, 2}), kMdnsPort}, kLink4, now);
      }
    }
  }
  EXPECT_EQ(first.instance(), "lab-rcv");
  EXPECT_EQ(second.instance(), "lab-rcv (2)");
  EXPECT_EQ(second.state(), Responder::State::announced);
}

Message ptr_query() {
  Message q;
  q.questions.push_back({braid_service_type(), 12, false, kClassIn});
  return q;
}

TEST(Responder, AnswersAPtrQueryAfterADelayWithSrvTxtAndAddressesOfThatInterface) {
  auto cfg = responder_config();
  cfg.interfaces.push_back({4, {IpAddress::v4({192, 168, 9, 9})}});
  Responder r(cfg, Time::zero());
  Time now = settled(r);
  r.handle_packet(encode(ptr_query()), kOther, kLink4, now);
  EXPECT_TRUE(drain(r).empty());  // shared record: 20-120 ms later (RFC 6762 6)
  EXPECT_GE(r.poll_timeout(), now + Duration::millis(20));
  EXPECT_LE(r.poll_timeout(), now + Duration::millis(120));
  now = r.poll_timeout();
  r.handle_timeout(now);
  auto out = drain(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].link, kLink4);
  EXPECT_FALSE(out[0].unicast_to.has_value());
  const auto m = decoded(out[0].bytes);
  ASSERT_EQ(m.answers.size(), 1u);
  EXPECT_EQ(std::get<DnsName>(m.answers[0].data).labels[0], "lab-rcv");
  int addresses = 0;
  for (const auto& rec : m.additionals) {
    if (rec.type == 1) {
      EXPECT_EQ((std::get<std::array<uint8_t, 4>>(rec.data)), (std::array<uint8_t, 4>{10, 0, 1, 2}));
      ++addresses;
    }
    if (rec.type == 28) ++addresses;
  }
  EXPECT_EQ(addresses, 2);  // not 192.168.9.9: that is interface 4's
  EXPECT_EQ(r.answered(), 1u);
}

TEST(Responder, KnownAnswerSuppressionAndUnrelatedQueries) {
  Responder r(responder_config(), Time::zero());
  Time now = settled(r);
  Message q = ptr_query();
  Record known;
  known.name = braid_service_type();
  known.type = 12;
  known.ttl = 4000;  // more than half of 4500
  known.data = DnsName::of({"lab-rcv", "_braid", "_tcp", "local"});
  q.answers.push_back(known);
  r.handle_packet(encode(q), kOther, kLink4, now);
  Message other;
  other.questions.push_back({DnsName::of({"_http", "_tcp", "local"}), 12, false, kClassIn});
  r.handle_packet(encode(other), kOther, kLink4, now);
  r.handle_timeout(now + Duration::seconds(1));
  EXPECT_TRUE(drain(r).empty());
  EXPECT_EQ(r.answered(), 0u);
  // With under half the TTL left, the querier gets the answer.
  q.answers[0].ttl = 1000;
  r.handle_packet(encode(q), kOther, kLink4, now + Duration::seconds(2));
  r.handle_timeout(now + Duration::seconds(3));
  EXPECT_EQ(drain(r).size(), 1u);
}

TEST(Responder, LegacyUnicastQueryGetsItsIdBackWithShortTtls) {
  Responder r(responder_config(), Time::zero());
  Time now = settled(r);
  Message q;
  q.id = 0xBEEF;
  q.questions.push_back({DnsName::of({"lab-rcv", "_braid", "_tcp", "local"}), 33, false, kClassIn});
  const PeerAddress resolver{IpAddress::v4({10, 0, 0, 9}), 40000};
  r.handle_packet(encode(q), resolver, kLink4, now);
  auto out = drain(r);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].unicast_to.has_value());
  EXPECT_EQ(out[0].unicast_to->port, 40000);
  const auto m = decoded(out[0].bytes);
  EXPECT_EQ(m.id, 0xBEEF);
  ASSERT_EQ(m.questions.size(), 1u);
  ASSERT_EQ(m.answers.size(), 1u);
  EXPECT_EQ(m.answers[0].type, 33);
  EXPECT_LE(m.answers[0].ttl, kLegacyUnicastTtl);
}

TEST(Responder, AnAnswerJustMulticastIsNotMulticastAgainWithinASecond) {
  Responder r(responder_config(), Time::zero());
  Time now = run_until_announced(r, Time::zero());  // the first announcement went out at `now`
  drain(r);
  r.handle_packet(encode(ptr_query()), kOther, kLink4, now + Duration::millis(500));
  r.handle_timeout(now + Duration::millis(700));
  EXPECT_TRUE(drain(r).empty());
  EXPECT_EQ(r.answered(), 0u);
}

TEST(Responder, AQueryFloodGetsAtMostOneMulticastASecond) {
  Responder r(responder_config(), Time::zero());
  Time now = settled(r);
  size_t sent = 0;
  for (int i = 0; i < 1000; ++i) {
    const Time t = now + Duration::millis(i);
    r.handle_packet(encode(ptr_query()), kOther, kLink4, t);
    r.handle_timeout(t);
    sent += drain(r).size();
  }
  EXPECT_GE(sent, 1u);
  EXPECT_LE(sent, 2u);  // one second of queries
}

TEST(Responder, NewTxtIsAnnouncedAndShutdownSaysGoodbye) {
  Responder r(responder_config(), Time::zero());
  Time now = settled(r);
  r.set_txt({"v=1", "n=1234", "fp=SHA256:abc"}, now);
  r.handle_timeout(now);
  auto out = drain(r);
  ASSERT_EQ(out.size(), 2u);  // both links
  bool saw = false;
  for (const auto& rec : decoded(out[0].bytes).answers)
    if (rec.type == 16) saw = std::get<std::vector<std::string>>(rec.data)[1] == "n=1234";
  EXPECT_TRUE(saw);
  r.shutdown(now + Duration::seconds(1));
  out = drain(r);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& rec : decoded(out[0].bytes).answers) EXPECT_EQ(rec.ttl, 0u);
  EXPECT_EQ(r.poll_timeout(), Time::never());
  r.handle_packet(encode(ptr_query()), kOther, kLink4, now + Duration::seconds(3));
  EXPECT_TRUE(drain(r).empty());
}

TEST(Responder, AnInterfaceThatAppearsIsAnnouncedOn) {
  Responder r(responder_config(), Time::zero());
  Time now = settled(r);
  auto ifs = r.interfaces();
  ifs.push_back({5, {IpAddress::v4({192, 168, 5, 5})}});
  r.set_interfaces(ifs, now);
  r.handle_timeout(now);
  bool on_new = false;
  for (auto& t : drain(r))
    if (t.link == Link{5, false}) {
      const auto m = decoded(t.bytes);
      for (const auto& rec : m.answers)
        if (rec.type == 1) on_new = std::get<std::array<uint8_t, 4>>(rec.data) == std::array<uint8_t, 4>{192, 168, 5, 5};
    }
  EXPECT_TRUE(on_new);
}

TEST(Responder, AnswersTheServicesMetaQuery) {
  Responder r(responder_config(), Time::zero());
  Time now = settled(r);
  Message q;
  q.questions.push_back({services_meta_query(), 12, false, kClassIn});
  r.handle_packet(encode(q), kOther, kLink4, now);
  r.handle_timeout(now + Duration::millis(200));
  auto out = drain(r);
  ASSERT_EQ(out.size(), 1u);
  const auto m = decoded(out[0].bytes);
  ASSERT_EQ(m.answers.size(), 1u);
  EXPECT_EQ(std::get<DnsName>(m.answers[0].data), braid_service_type());
}

TEST(Responder, MalformedPacketsAreCountedAndIgnored) {
  Responder r(responder_config(), Time::zero());
  Time now = run_until_announced(r, Time::zero());
  uint64_t seed = 1;
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> junk(12 + i % 300);
    for (auto& b : junk) b = static_cast<uint8_t>((seed = seed * 6364136223846793005ull + 1) >> 56);
    r.handle_packet(junk, kOther, kLink4, now);
  }
  EXPECT_GT(r.malformed(), 1000u);
  EXPECT_EQ(r.state(), Responder::State::announced);
}

// --- browser ----------------------------------------------------------------

TEST(Browser, QueriesWithRfc6762Backoff) {
  Browser b(BrowserConfig{braid_service_type(), {kLink4, kLink6}, 3}, Time::zero());
  std::vector<Time> times;
  Time now = Time::zero();
  while (now < Time::zero() + Duration::seconds(70)) {
    now = b.poll_timeout();
    b.handle_timeout(now);
    auto out = drain(b);
    if (out.empty()) continue;
    EXPECT_EQ(out.size(), 2u);  // one per link
    const auto m = decoded(out[0].bytes);
    EXPECT_FALSE(m.is_response());
    EXPECT_EQ(m.questions.at(0).name, braid_service_type());
    EXPECT_FALSE(m.questions.at(0).unicast_response);
    times.push_back(now);
  }
  ASSERT_GE(times.size(), 7u);
  EXPECT_GE(times[0], at_ms(20));
  EXPECT_LE(times[0], at_ms(120));
  EXPECT_EQ(times[1] - times[0], Duration::seconds(1));
  EXPECT_EQ(times[2] - times[1], Duration::seconds(2));
  EXPECT_EQ(times[3] - times[2], Duration::seconds(4));
  EXPECT_EQ(times[6] - times[5], Duration::seconds(32));
}

// A responder and a browser on one link, in virtual time.
struct Pair {
  Responder r{responder_config(), Time::zero()};
  Browser b{BrowserConfig{braid_service_type(), {kLink4}, 11}, Time::zero()};
  Time now = Time::zero();
  bool drop_all = false;

  void step() {
    now = std::min(r.poll_timeout(), b.poll_timeout());
    r.handle_timeout(now);
    b.handle_timeout(now);
    deliver();
  }
  void deliver() {
    for (int round = 0; round < 4; ++round) {
      for (auto& t : drain(r))
        if (!drop_all && t.link == kLink4) b.handle_packet(t.bytes, {IpAddress::v4({10, 0, 1, 2}), kMdnsPort}, kLink4, now);
      for (auto& t : drain(b))
        if (!drop_all) r.handle_packet(t.bytes, {IpAddress::v4({10, 0, 0, 5}), kMdnsPort}, kLink4, now);
    }
  }
};

TEST(Browser, FindsTheResponderWithItsTxtAndAddresses) {
  Pair p;
  while (p.b.instances(p.now).empty() && p.now < at_ms(5000)) p.step();
  const auto found = p.b.instances(p.now);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].instance, "lab-rcv");
  EXPECT_EQ(found[0].port, 7878);
  EXPECT_EQ(found[0].txt_value("n"), "4711");
  EXPECT_EQ(found[0].txt_value("FP"), "SHA256:abc");
  EXPECT_FALSE(found[0].txt_value("secret").has_value());
  ASSERT_EQ(found[0].addresses.size(), 2u);
  for (const auto& a : found[0].addresses) EXPECT_EQ(a.interface, 3u);
  // Seen on the announcement, 750 ms of probing plus up to 250 ms of delay in.
  EXPECT_LE(p.now, at_ms(1100));
}

TEST(Browser, AGoodbyeRemovesThePeerAndTtlExpiryDoesToo) {
  Pair p;
  while (p.b.instances(p.now).empty() && p.now < at_ms(5000)) p.step();
  ASSERT_EQ(p.b.instances(p.now).size(), 1u);
  p.r.shutdown(p.now);
  p.deliver();
  EXPECT_TRUE(p.b.instances(p.now).empty());

  Pair q;
  while (q.b.instances(q.now).empty() && q.now < at_ms(5000)) q.step();
  ASSERT_EQ(q.b.instances(q.now).size(), 1u);
  q.drop_all = true;  // the receiver vanishes without a word
  EXPECT_EQ(q.b.instances(q.now + Duration::seconds(119)).size(), 1u);
  EXPECT_TRUE(q.b.instances(q.now + Duration::seconds(121)).empty());  // SRV and A: 120 s
}

TEST(Browser, KnownAnswersKeepTheResponderQuiet) {
  Pair p;
  while (p.b.instances(p.now).empty() && p.now < at_ms(5000)) p.step();
  const auto answered = p.r.answered();
  for (int i = 0; i < 6; ++i) p.step();  // several more queries, each with the PTR as a known answer
  EXPECT_EQ(p.r.answered(), answered);
  EXPECT_EQ(p.b.instances(p.now).size(), 1u);
}

TEST(Browser, KeepsOnlyItsServiceAndBoundsTheCache) {
  Browser b(BrowserConfig{braid_service_type(), {kLink4}, 5}, Time::zero());
  // 10 000 instances of our type, 100 per packet: the cache stays bounded.
  for (int pkt = 0; pkt < 100; ++pkt) {
    Message m;
    m.flags = 0x8400;
    for (int i = 0; i < 100; ++i) {
      Record r;
      r.name = braid_service_type();
      r.type = 12;
      r.ttl = 4500;
      std::string label = "i";
      label += std::to_string(pkt * 100 + i);
      r.data = DnsName::of({label, "_braid", "_tcp", "local"});
      m.answers.push_back(r);
    }
    b.handle_packet(encode(m), kOther, kLink4, at_ms(pkt));
  }
  EXPECT_EQ(b.cached_records(), kMaxCachedRecords);
  EXPECT_GT(b.dropped_records(), 0u);
  // Another service's records and addresses of hosts no SRV names are not kept.
  Browser c(BrowserConfig{braid_service_type(), {kLink4}, 5}, Time::zero());
  Message m;
  m.flags = 0x8400;
  Record ptr;
  ptr.name = DnsName::of({"_http", "_tcp", "local"});
  ptr.type = 12;
  ptr.ttl = 4500;
  ptr.data = DnsName::of({"web", "_http", "_tcp", "local"});
  Record a;
  a.name = DnsName::of({"somehost", "local"});
  a.type = 1;
  a.ttl = 120;
  a.data = std::array<uint8_t, 4>{1, 2, 3, 4};
  m.answers = {ptr, a};
  c.handle_packet(encode(m), kOther, kLink4, at_ms(1));
  EXPECT_EQ(c.cached_records(), 0u);
  // A response from a port other than 5353 is ignored (RFC 6762 6).
  Message ours;
  ours.flags = 0x8400;
  ptr.name = braid_service_type();
  ptr.data = DnsName::of({"x", "_braid", "_tcp", "local"});
  ours.answers = {ptr};
  c.handle_packet(encode(ours), {IpAddress::v4({10, 0, 0, 9}), 12345}, kLink4, at_ms(2));
  EXPECT_EQ(c.cached_records(), 0u);
  c.handle_packet(encode(ours), kOther, kLink4, at_ms(3));
  EXPECT_EQ(c.cached_records(), 1u);
}

TEST(IpAddress, PrintsLikeInetNtop) {
  EXPECT_EQ(IpAddress::v4({10, 0, 1, 2}).str(), "10.0.1.2");
  EXPECT_EQ(IpAddress::v6_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}).str(), "fe80::2");
  EXPECT_EQ(IpAddress::v6_of({0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}).str(), "2001:db8:1::1");
  EXPECT_TRUE(IpAddress::v6_of({0xfe, 0x80}).is_link_local());
  EXPECT_FALSE(IpAddress::v4({10, 0, 0, 1}).is_link_local());
}

}  // namespace
}  // namespace braid::discovery
