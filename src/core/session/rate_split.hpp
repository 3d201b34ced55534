// How the sender shares rate caps among its live data lanes: `--rate-limit`
// over the whole transfer, and `--metered IFACE=RATE` over the lanes of one
// interface (a phone's cellular link, a capped uplink). Pure arithmetic,
// called by session::Sender whenever lanes come or go and as their measured
// rates move.
//
// An even split wastes a cap whenever the lanes differ: 60 Mbit/s over a
// 100 and a 10 Mbit/s link gives each 30 and moves 40. Instead each lane
// claims what it was measured to deliver plus a margin (so a lane that can
// do more shows it at the next split), and the cap is water-filled over the
// claims: a lane that cannot use its even share keeps what it claims, the
// rest goes to the lanes that can. A lane not yet measured claims without
// bound. A lane that stalled and has delivered nothing since shares only an
// eighth of the cap with the other such lanes, so the live ones are not held
// at a fraction of it. The caps never add up to more than the limit.
#pragma once

#include <optional>
#include <vector>

namespace braid::session {

/// What a measured lane may claim above its measured rate. One that runs at
/// its cap (its path may do more) claims a quarter more, enough to find out
/// within a few splits; one well below its cap is held by its path, and
/// claims only a little more than it delivers, so the cap it cannot use
/// goes to the others. The caps count what the network carries (the lanes
/// add their IP and transport headers' share, ~3.5 % at 1500 bytes) and the
/// measured rates count file bytes: the margins cover the difference.
constexpr double kClaimHeadroom = 1.25;
constexpr double kPathLimitedHeadroom = 1.1;
/// Delivering at least this share of its cap, a lane is held by the cap.
constexpr double kAtCap = 0.7;

struct RateClaim {
  std::optional<double> measured;  // bytes/s it delivered lately; none: not measured yet
  bool stalled = false;            // stalled and nothing delivered since
  int group = -1;                  // index into the group caps (a metered interface), -1: none
  std::optional<double> cap = {};  // its cap now (bytes/s), if any
};

/// Each lane's cap in bytes/s (none: uncapped) for `total` (none: no
/// --rate-limit) and the metered groups' caps, over `lanes`.
std::vector<std::optional<double>> split_rates(std::optional<double> total, const std::vector<double>& group_caps,
                                               const std::vector<RateClaim>& lanes);

/// Whether a lane's cap should change from `current` to `wanted` (bytes/s;
/// none: uncapped). Small rises (within 2 %) are not worth a syscall per
/// lane at every split; falls always are: a lane kept a little above its new
/// share while another lane's rise went out put the caps' sum over the limit
/// (1 % over --rate-limit on loopback). So if the wanted caps add up to at
/// most the limit, the caps in force do too.
bool cap_worth_setting(std::optional<double> current, std::optional<double> wanted);

/// Water-fills `cap` over the `claims` (bytes/s; a negative claim is
/// unbounded): every claim below the fair level is met, the rest share
/// what is left evenly. What no one claims is shared on top among the
/// lanes that may grow (`grows`; all of them if none may or it is empty).
std::vector<double> water_fill(double cap, const std::vector<double>& claims, const std::vector<bool>& grows = {});

}  // namespace braid::session
