// All links of a lab and their timed events, in virtual time. This is the
// whole behaviour of netlab-emu without any I/O: the emulator reads packets
// from TUN and hands them to handle_packet(), writes what poll_delivery()
// returns, and sleeps until poll_timeout().
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "link_direction.hpp"
#include "link_params.hpp"

namespace netlab {

enum class Dir { up = 0, down = 1 };  // up: snd -> rcv, down: rcv -> snd
inline const char* dir_name(Dir d) { return d == Dir::up ? "up" : "down"; }

class LabModel {
 public:
  /// `seed` feeds every link whose spec has no seed of its own; each
  /// direction gets its own stream so adding traffic on one does not change
  /// the losses of another.
  LabModel(std::vector<LinkSpec> links, std::uint64_t seed);

  /// Schedules `event` at now + event.at. Returns an error text (unknown
  /// link) or an empty string.
  std::string schedule(const LinkEvent& event, TimePoint now);

  void handle_packet(std::size_t link, Dir dir, Packet packet, TimePoint now);
  std::optional<Packet> poll_delivery(std::size_t link, Dir dir, TimePoint now);
  /// Earliest time at which a delivery or an event is due.
  std::optional<TimePoint> poll_timeout() const;

  /// Applies every event due at `now`; the other calls do this themselves.
  /// Returns how many were applied, so the emulator can react (e.g. to a
  /// loss change) only when something happened.
  std::size_t apply_due_events(TimePoint now);

  std::size_t link_count() const { return specs_.size(); }
  const LinkSpec& spec(std::size_t link) const { return specs_[link]; }
  const LinkDirection& direction(std::size_t link, Dir dir) const { return dirs_[index(link, dir)]; }
  std::optional<std::size_t> find(const std::string& name) const;

  /// Whether the kernel may hand this direction TCP super-packets: only when
  /// the link allows GSO, the direction has no random loss, so that loss
  /// stays per 1500-byte packet, and it is fast enough (32 Mbit/s) that a
  /// super-packet delivered in one piece arrives about when its segments would.
  bool wants_gso(std::size_t link, Dir dir) const;

 private:
  static std::size_t index(std::size_t link, Dir dir) { return link * 2 + static_cast<std::size_t>(dir); }
  struct Pending {
    std::size_t link;
    DirectionPatch up, down;
  };

  std::vector<LinkSpec> specs_;
  std::vector<LinkDirection> dirs_;
  std::multimap<TimePoint, Pending> events_;  // equal times keep insertion order
};

}  // namespace netlab
