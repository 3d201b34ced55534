// The sender's running transfer as the engine sees it (the machine holds
// the protocol state): shared by sender_session.cpp and sender_report.cpp.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "engine/transfer/live_display.hpp"
#include "engine/transfer/sender_session.hpp"
#include "engine/transfer/source_reader.hpp"

namespace braid::transfer {

// One transfer in progress (engine side: the machine holds the protocol state).
struct SenderActive {
  uint32_t id = 0;
  std::shared_ptr<PieceSource> source;
  /// The same as `source` when it reads files (not a probe's): a streamed
  /// walk grows it (SourceReader::grow).
  std::shared_ptr<SourceReader> files;
  compress::Mode compress = compress::Mode::automatic;  // what the receiver can take (begin_transfer_locked)
  std::optional<session::TransferOutcome> outcome;
  Time start;
  Time ended_at;
  int next_decile = 1;
  Time next_sample;
  LiveDisplay* display = nullptr;  // TransferOptions::display
  // Per lane: its counters when the transfer began, and its first piece's start.
  std::map<LaneNo, DataLaneCounters> at_start;
  std::map<LaneNo, Time> first_send;
};

}  // namespace braid::transfer
