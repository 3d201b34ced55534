// Test harness: one LaneSender and one LaneReceiver wired back to back in
// virtual time with a fixed one-way delay. Fault injection is plain data
// manipulation, as in quinn's tests: a predicate drops data packets by
// number, a hook can hold packets back to reorder them, acks can be captured
// and replayed.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "core/transport/lane_receiver.hpp"
#include "core/transport/lane_sender.hpp"
#include "core/transport/range_set.hpp"

namespace braid::transport::testing {

struct Datagram {
  Time arrival;
  uint64_t packet_number = 0;
  std::vector<uint8_t> bytes;
};

/// Records unique stream bytes received (piece p, offset o → p * 2^20 + o).
struct CountingSink : DataSink {
  RangeSet unique;
  uint64_t fresh = 0;
  uint64_t frames = 0;
  void on_data(const DataRange& r, std::span<const uint8_t>) override {
    ++frames;
    const uint64_t lo = (r.piece << 20) + r.offset;
    fresh += unique.insert(lo, lo + r.length - 1);
  }
};

class LanePair {
 public:
  explicit LanePair(std::string_view cc = "delay", Duration one_way = Duration::millis(10),
                    SenderConfig sc = {}, ReceiverConfig rc = {})
      : delay_(one_way) {
    sc.lane_id = 7;
    rc.lane_id = 7;
    sender = LaneSender::create(sc, cc);
    receiver = std::make_unique<LaneReceiver>(rc);
  }

  std::unique_ptr<LaneSender> sender;
  std::unique_ptr<LaneReceiver> receiver;
  CountingSink sink;
  Time now = Time::zero();
  bool consume = true;  // report data consumed as soon as it arrives

  /// Return true to drop the data packet with this number.
  std::function<bool(uint64_t)> drop_data = [](uint64_t) { return false; };
  /// Extra delay for a data packet (reordering by time).
  std::function<Duration(uint64_t)> extra_delay = [](uint64_t) { return Duration::zero(); };
  /// How many later data packets overtake this one (reordering by position).
  std::function<int(uint64_t)> overtaken_by = [](uint64_t) { return 0; };
  std::vector<std::vector<uint8_t>> feedback_log;  // every feedback packet sent

  void enqueue_bytes(uint64_t n) {
    for (uint64_t off = 0; off < n; off += uint64_t{1} << 20) {
      const uint64_t len = std::min<uint64_t>(uint64_t{1} << 20, n - off);
      sender->enqueue(DataRange{off >> 20, 0, static_cast<uint32_t>(len)});
    }
  }

  Time next_event() const {
    Time t = std::min(sender->poll_timeout(), receiver->poll_timeout());
    if (!to_receiver_.empty()) t = std::min(t, earliest(to_receiver_));
    if (!to_sender_.empty()) t = std::min(t, to_sender_.front().arrival);
    return t;
  }

  /// Advances to the next event (not beyond `limit`); false if nothing is left.
  bool step(Time limit) {
    const Time t = next_event();
    if (t == Time::never() || t > limit) {
      now = limit;
      return false;
    }
    now = std::max(now, t);
    // Deliver data packets due (in arrival order, which reordering may change).
    for (;;) {
      auto it = std::min_element(to_receiver_.begin(), to_receiver_.end(),
                                 [](const Datagram& a, const Datagram& b) { return a.arrival < b.arrival; });
      if (it == to_receiver_.end() || it->arrival > now) break;
      Datagram d = std::move(*it);
      to_receiver_.erase(it);
      const uint64_t before = sink.fresh;
      receiver->on_datagram_received(now, d.bytes, sink);
      if (consume) receiver->on_data_consumed(Bytes(sink.fresh - before));
    }
    while (!to_sender_.empty() && to_sender_.front().arrival <= now) {
      last_error = sender->on_datagram_received(now, to_sender_.front().bytes);
      to_sender_.pop_front();
    }
    sender->on_timeout(now);
    std::vector<uint8_t> buf(kMaxDatagramSize + kAeadTagSize);
    while (auto t = sender->poll_transmit(now, buf)) {
      ++data_packets_sent;
      if (!drop_data(t->packet_number)) {
        Datagram d{now + delay_ + extra_delay(t->packet_number), t->packet_number,
                   std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(t->size))};
        const Time arrival = d.arrival;
        const int n = overtaken_by(t->packet_number);
        if (n > 0) {
          held_.push_back({n + 1, std::move(d)});
        } else {
          to_receiver_.push_back(std::move(d));
        }
        release_held(arrival);
      }
    }
    receiver->on_timeout(now);
    while (auto n = receiver->poll_transmit(now, buf)) {
      std::vector<uint8_t> pkt(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
      feedback_log.push_back(pkt);
      to_sender_.push_back({now + delay_, 0, std::move(pkt)});
    }
    return true;
  }

  void run_until(Time limit) {
    while (step(limit)) {
    }
  }
  /// Runs until the sender has everything acked (or `limit`).
  bool run_until_acked(Time limit) {
    while (!sender->all_acked()) {
      if (!step(limit)) return false;
    }
    return true;
  }

  /// Delivers a raw feedback packet to the sender now.
  TransportError inject_feedback(const std::vector<uint8_t>& pkt) {
    return sender->on_datagram_received(now, pkt);
  }

  uint64_t data_packets_sent = 0;
  TransportError last_error = TransportError::ok;

 private:
  static Time earliest(const std::deque<Datagram>& q) {
    Time t = Time::never();
    for (const auto& d : q) t = std::min(t, d.arrival);
    return t;
  }
  // Packets held back until `n` later packets have been sent past them.
  void release_held(Time later_arrival) {
    for (auto it = held_.begin(); it != held_.end();) {
      if (--it->first == 0) {
        // Same arrival time, queued behind the packet that overtook it.
        it->second.arrival = std::max(it->second.arrival, later_arrival);
        to_receiver_.push_back(std::move(it->second));
        it = held_.erase(it);
      } else {
        ++it;
      }
    }
  }
  Duration delay_;
  std::vector<std::pair<int, Datagram>> held_;
  std::deque<Datagram> to_receiver_;
  std::deque<Datagram> to_sender_;
};

inline Time at_ms(int64_t ms) { return Time::zero() + Duration::millis(ms); }

}  // namespace braid::transport::testing
