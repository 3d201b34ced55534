// Sparse files (`braid send -S`): the ranges of a file that hold data, as
// the offer lists them (ManifestEntry::data), and the holes between them.
// Pure: the engine finds the ranges (lseek SEEK_DATA/SEEK_HOLE); these
// functions only check, tidy and complement them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::wire {

/// Sorted, disjoint and not touching (two that touch are one range), none
/// empty, all inside [0, size). What decode accepts of a peer.
bool valid_data_ranges(const std::vector<DataRange>& ranges, uint64_t size);

/// What a sender offers for a file of `size` bytes whose data the file
/// system reported as `found` (any order, may overlap, touch or pass the
/// end): the ranges clipped to the file, merged and sorted. nullopt when
/// the file has no hole (one range covering it all) or more than `max`
/// ranges remain: then it is sent as plain data.
std::optional<std::vector<DataRange>> data_ranges_to_offer(std::vector<DataRange> found, uint64_t size,
                                                           size_t max = kMaxDataRanges);

/// The holes of a file entry: [0, size) less its data ranges, in order.
/// Empty for an entry without data ranges.
std::vector<DataRange> holes_of(const ManifestEntry& e);

}  // namespace braid::wire
