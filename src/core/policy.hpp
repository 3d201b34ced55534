// The scheduling policy interface: the one thing that differs between braid's
// own scheduler and the baselines it is compared with. Every policy shares the
// chunk plan, the lane estimators, the stall timers and the ack bookkeeping of
// `Scheduler`; a policy only chooses (a) which lane takes which piece next and
// (b) a few rules for stalls and estimation, so a comparison between policies
// compares decisions, not implementations.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "core/chunk_plan.hpp"
#include "core/lane_estimator.hpp"
#include "core/units.hpp"

namespace braid::core {

using LaneId = uint32_t;
class Scheduler;

/// One decision: lane `lane` takes piece `piece`, cut to `split_to` bytes
/// first if that is set (only for a never-sent pending piece). With
/// `take_from`, the piece is queued on that lane and not started there: it
/// moves (that lane is told to drop it) instead of being copied.
struct Pick {
  LaneId lane = 0;
  PieceId piece = 0;
  std::optional<Bytes> split_to;
  bool duplicate = false;
  std::optional<LaneId> take_from;
};

/// The rules for stalls and estimation. The defaults are the fixed rules of
/// MISSION.md §1; the seed's old push rules override them.
struct PolicyRules {
  EstimatorConfig estimator;
  /// Rate assumed for a lane that has no hint and no ack yet: only for sizing
  /// its stall deadline, never for scheduling (braid) — the seed's old rules
  /// scheduled with it.
  std::optional<Rate> default_hint;
  /// Stall deadline = start + clamp(stall_factor × expected time, min_stall, stall_cap).
  double stall_factor = 2.0;
  Duration min_stall = Duration::seconds(1);
  std::optional<Duration> stall_cap;  // the seed's old rules capped it at 3 s
  /// The deadline counts from when the lane starts sending the piece; the old
  /// rules counted from hand-out, so a piece queued behind others missed it.
  bool deadline_from_assignment = false;
  /// On a stall, tell every lane carrying the piece to drop it (old rules) or
  /// only the stalled lane (fixed rule).
  bool stall_drops_everywhere = false;
  /// The old rules took rate samples from socket-write completion to ack,
  /// with no guard on the interval.
  bool estimate_from_writes = false;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual PolicyRules rules() const { return {}; }
  /// The next assignment, or nothing if no lane should take work now. Called
  /// repeatedly until it returns nothing; each pick changes the state it sees.
  virtual std::optional<Pick> pick(const Scheduler& s, Time now) = 0;
  /// A time at which `pick` may answer differently without any other event
  /// (e.g. the end of a probe back-off), if any.
  virtual std::optional<Time> next_wakeup(const Scheduler&) const { return std::nullopt; }
  /// Notifications, for policies that keep state of their own.
  virtual void on_stall(LaneId, Time) {}
  virtual void on_delivery(LaneId, Time) {}
};

}  // namespace braid::core
