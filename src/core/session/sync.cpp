#include "core/session/sync.hpp"

#include <algorithm>

#include "core/wire/data_ranges.hpp"

namespace braid::session::sync {

std::optional<wire::FileVerdict> decide(const wire::ManifestEntry& entry, const Existing& there,
                                        const wire::SyncOptions& opts) {
  if (!opts.sync || entry.kind != wire::EntryKind::file || there.kind == Existing::Kind::none) return std::nullopt;
  if (entry.hard_link_to) return std::nullopt;  // no bytes of its own: linked again to its file every run
  if (opts.ignore_existing) return wire::FileVerdict::exists_here;
  // Only a regular file can be compared or kept: a link or a device under
  // the name is replaced by the file sent whole.
  if (there.kind != Existing::Kind::file) return std::nullopt;
  const bool newer = there.mtime_sec > entry.mtime_sec ||
                     (there.mtime_sec == entry.mtime_sec && there.mtime_nsec > entry.mtime_nsec);
  if (opts.update && newer) return wire::FileVerdict::newer_here;
  const bool same_stamp = there.size == entry.size && there.mtime_sec == entry.mtime_sec &&
                          there.mtime_nsec == entry.mtime_nsec;
  if (same_stamp && !opts.checksum) return wire::FileVerdict::unchanged;
  return wire::FileVerdict::older_here;
}

std::vector<uint64_t> entry_offsets(std::span<const wire::ManifestEntry> entries) {
  std::vector<uint64_t> out(entries.size());
  uint64_t at = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    out[i] = at;
    if (entries[i].kind == wire::EntryKind::file) at += entries[i].size;
  }
  return out;
}

namespace {

void cut_at_chunks(Span s, uint64_t chunk, std::vector<wire::HeldRange>& out) {
  while (s.length > 0) {
    const uint64_t room = chunk - s.offset % chunk;
    const uint64_t n = std::min(room, s.length);
    out.push_back(wire::HeldRange{s.offset, n, {}});
    s.offset += n;
    s.length -= n;
  }
}

}  // namespace

namespace {

/// `start`: the transfer offset where entries[0] begins (0 for a whole offer).
template <class Entries>
std::vector<wire::HeldRange> kept_records_of(const Entries& entries, uint64_t chunk_size,
                                             const std::vector<wire::FileDecision>& files, uint64_t start = 0) {
  std::vector<wire::HeldRange> out;
  if (chunk_size == 0) return out;
  RangeCutter cut(chunk_size);
  auto f = files.begin();
  size_t i = 0;
  for (const wire::ManifestEntry& e : entries) {
    const uint64_t at = start;
    const size_t index = i++;
    if (e.kind != wire::EntryKind::file) continue;
    start += e.size;
    if (e.size == 0) continue;
    while (f != files.end() && f->entry < index) ++f;
    if (f != files.end() && f->entry == index && keeps(f->verdict)) {
      cut.add(at, e.size, out);
      continue;
    }
    for (const auto& h : wire::holes_of(e)) cut.add(at + h.offset, h.length, out);
  }
  cut.finish(out);
  return out;
}

}  // namespace

void RangeCutter::add(uint64_t at, uint64_t n, std::vector<wire::HeldRange>& out) {
  if (run_ && run_->offset + run_->length == at) {
    run_->length += n;
  } else {
    if (run_ && chunk_ > 0) cut_at_chunks(*run_, chunk_, out);
    run_ = Span{at, n};
  }
  // The run's records up to its last chunk boundary are what they will be
  // however it grows: they go now (a long run of holes need not hold the
  // receiver's verified prefix back), the rest stays the run.
  if (chunk_ == 0) return;
  const uint64_t end = run_->offset + run_->length, boundary = end / chunk_ * chunk_;
  if (boundary <= run_->offset) return;
  cut_at_chunks(Span{run_->offset, boundary - run_->offset}, chunk_, out);
  run_ = Span{boundary, end - boundary};
}

void RangeCutter::finish(std::vector<wire::HeldRange>& out) {
  if (run_ && run_->length > 0 && chunk_ > 0) cut_at_chunks(*run_, chunk_, out);
  run_.reset();
}

void HoleRecords::add(std::span<const wire::ManifestEntry> entries, std::vector<wire::HeldRange>& out) {
  for (const auto& e : entries) {
    if (e.kind != wire::EntryKind::file || e.size == 0) continue;
    const auto holes = wire::holes_of(e);
    // A file whose first byte is data ends the run before it: no later hole
    // can join it, so its records go now rather than with the next hole
    // (the same records; the receiver's verified prefix need not wait).
    if (holes.empty() || holes.front().offset > 0) cut_.finish(out);
    for (const auto& h : holes) {
      cut_.add(at_ + h.offset, h.length, out);
      bytes_ += h.length;
    }
    at_ += e.size;
  }
}

std::vector<wire::HeldRange> kept_records(std::span<const wire::ManifestEntry> entries, uint64_t chunk_size,
                                          const std::vector<wire::FileDecision>& files) {
  return kept_records_of(entries, chunk_size, files);
}

std::vector<wire::HeldRange> holes_between(std::span<const wire::ManifestEntry> entries, uint64_t start,
                                           uint64_t chunk_size, uint64_t from, uint64_t to) {
  std::vector<wire::HeldRange> out;
  for (auto& r : kept_records_of(entries, chunk_size, {}, start))
    if (r.offset >= from && r.offset + r.length <= to) out.push_back(std::move(r));
  return out;
}

namespace {

template <class Entries>
uint64_t hole_bytes_of(const Entries& entries, const std::vector<wire::FileDecision>& files) {
  uint64_t n = 0;
  auto f = files.begin();
  size_t i = 0;
  for (const wire::ManifestEntry& e : entries) {
    const size_t index = i++;
    if (e.kind != wire::EntryKind::file) continue;
    while (f != files.end() && f->entry < index) ++f;
    if (f != files.end() && f->entry == index && keeps(f->verdict)) continue;
    n += e.size - e.data_bytes();
  }
  return n;
}

}  // namespace

uint64_t hole_bytes(const std::vector<wire::ManifestEntry>& entries, const std::vector<wire::FileDecision>& files) {
  return hole_bytes_of(entries, files);
}

std::vector<Span> reusable_spans(uint64_t start, uint64_t size, uint64_t old_size, uint64_t chunk_size,
                                 const wire::Boxed<std::vector<wire::DataRange>>& data) {
  std::vector<Span> out;
  if (chunk_size == 0) return out;
  std::vector<wire::HeldRange> cut;
  if (!data) {
    cut_at_chunks(Span{start, std::min(size, old_size)}, chunk_size, cut);
  } else {
    for (const auto& d : *data) {
      const uint64_t end = std::min({d.offset + d.length, size, old_size});
      if (end > d.offset) cut_at_chunks(Span{start + d.offset, end - d.offset}, chunk_size, cut);
    }
  }
  for (const auto& c : cut) out.push_back(Span{c.offset, c.length});
  return out;
}

std::string check_decisions(std::span<const wire::ManifestEntry> entries, bool sync,
                            const std::vector<wire::FileDecision>& files) {
  if (files.empty()) return {};
  if (!sync) return "the receiver sent file verdicts for a transfer without sync";
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    if (i > 0 && f.entry <= files[i - 1].entry) return "the receiver's file verdicts are out of order";
    if (f.entry >= entries.size() || entries[f.entry].kind != wire::EntryKind::file)
      return "the receiver gave a verdict on entry " + std::to_string(f.entry) + ", which is not a file of the offer";
  }
  return {};
}

Tally tally(const wire::Offer& offer, const std::vector<wire::FileDecision>& files,
            const std::vector<wire::HeldRange>& reused) {
  Tally t;
  const auto starts = entry_offsets(offer);
  // Bytes of [at, at + n) the reused ranges cover.
  auto covered = [&](uint64_t at, uint64_t n) {
    uint64_t sum = 0;
    auto r = std::lower_bound(reused.begin(), reused.end(), at,
                              [](const wire::HeldRange& h, uint64_t x) { return h.offset + h.length <= x; });
    for (; r != reused.end() && r->offset < at + n; ++r)
      sum += std::min(at + n, r->offset + r->length) - std::max(at, r->offset);
    return sum;
  };
  auto it = files.begin();
  for (size_t i = 0; i < offer.entries.size(); ++i) {
    const auto& e = offer.entries[i];
    if (e.kind != wire::EntryKind::file || e.hard_link_to) continue;  // a link: made again, no bytes
    while (it != files.end() && it->entry < i) ++it;
    if (it == files.end() || it->entry != i || !keeps(it->verdict)) t.hole_bytes += e.size - e.data_bytes();
    if (it == files.end() || it->entry != i) {
      ++t.files_sent;
      continue;
    }
    switch (it->verdict) {
      case wire::FileVerdict::unchanged: ++t.files_unchanged; break;
      case wire::FileVerdict::newer_here:
      case wire::FileVerdict::exists_here: ++t.files_skipped; break;
      case wire::FileVerdict::older_here:
        if (e.size > 0 && covered(starts[i], e.size) == e.size) ++t.files_unchanged;
        else ++t.files_updated;
        break;
    }
    if (keeps(it->verdict)) t.kept_bytes += e.size;
  }
  return t;
}

}  // namespace braid::session::sync
