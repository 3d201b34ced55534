#include "lab_model.hpp"

#include "rng.hpp"

namespace netlab {

LabModel::LabModel(std::vector<LinkSpec> links, std::uint64_t seed) : specs_(std::move(links)) {
  dirs_.reserve(specs_.size() * 2);
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const LinkSpec& s = specs_[i];
    const std::uint64_t base = s.seed != 0 ? s.seed : seed + 0x1000 * (i + 1);
    for (Dir d : {Dir::up, Dir::down}) {
      Rng mixer(base * 2 + static_cast<std::uint64_t>(d));
      dirs_.emplace_back(d == Dir::up ? s.up : s.down, mixer.next(), s.mtu);
    }
  }
}

std::optional<std::size_t> LabModel::find(const std::string& name) const {
  for (std::size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].name == name) return i;
  return std::nullopt;
}

std::string LabModel::schedule(const LinkEvent& event, TimePoint now) {
  const TimePoint when = now + event.at;
  if (event.link == "*") {
    for (std::size_t i = 0; i < specs_.size(); ++i) events_.emplace(when, Pending{i, event.up, event.down});
    return {};
  }
  const auto link = find(event.link);
  if (!link) return "no link named '" + event.link + "'";
  events_.emplace(when, Pending{*link, event.up, event.down});
  return {};
}

std::size_t LabModel::apply_due_events(TimePoint now) {
  std::size_t applied = 0;
  while (!events_.empty() && events_.begin()->first <= now) {
    const auto [when, e] = *events_.begin();
    events_.erase(events_.begin());
    // Applied at its own time, not at `now`, so a late wake-up does not shift it.
    if (!e.up.empty()) dirs_[index(e.link, Dir::up)].handle_patch(e.up, when);
    if (!e.down.empty()) dirs_[index(e.link, Dir::down)].handle_patch(e.down, when);
    ++applied;
  }
  return applied;
}

void LabModel::handle_packet(std::size_t link, Dir dir, Packet packet, TimePoint now) {
  apply_due_events(now);
  dirs_[index(link, dir)].handle_packet(std::move(packet), now);
}

std::optional<Packet> LabModel::poll_delivery(std::size_t link, Dir dir, TimePoint now) {
  apply_due_events(now);
  return dirs_[index(link, dir)].poll_delivery(now);
}

std::optional<TimePoint> LabModel::poll_timeout() const {
  std::optional<TimePoint> t;
  if (!events_.empty()) t = events_.begin()->first;
  for (const auto& d : dirs_)
    if (const auto dt = d.poll_timeout()) t = t ? std::min(*t, *dt) : *dt;
  return t;
}

namespace {
// The model delivers a super-packet whole once its last segment has crossed,
// where a real link hands over each segment as it crosses: the first one
// arrives late by the others' serialisation. On a fast link that is
// nothing; at 4 Mbit/s a ten-packet burst arrived 29 ms late in one piece,
// and a sender's first RTT samples (braid's UDP lanes took their base from
// them) and the acks that clock it read that lump as path. Below this rate
// (64 KiB: 16 ms; ten packets: 3.7 ms) the kernel cuts the segments before
// the emulator sees them; at under 2,700 packets a second that costs nothing.
constexpr std::uint64_t kMinGsoBitsPerSecond = 32'000'000;
}  // namespace

bool LabModel::wants_gso(std::size_t link, Dir dir) const {
  const DirectionParams& p = direction(link, dir).params();
  const bool fast = p.rate.is_unlimited() || p.rate.bps() >= kMinGsoBitsPerSecond;
  return specs_[link].gso && p.loss <= 0 && fast;
}

}  // namespace netlab
