#include "stats_report.hpp"

#include <cstdio>

namespace netlab {
namespace {

double seconds(Duration d) { return static_cast<double>(d.count()) / 1e9; }

nlohmann::json queue_json(const QueueLimit& q) {
  switch (q.unit) {
    case QueueLimit::Unit::packets:
      return {{"packets", q.amount}};
    case QueueLimit::Unit::bytes:
      return {{"bytes", q.amount}};
    case QueueLimit::Unit::time:
      return {{"seconds", seconds(q.time)}};
  }
  return {};
}

nlohmann::json direction_json(const LinkDirection& d, const IoCounters& io) {
  const auto& c = d.counters();
  const auto& p = d.params();
  return {
      {"settings",
       {{"rate_bps", p.rate.bps()},  // 0: unlimited
        {"delay_s", seconds(p.delay)},
        {"jitter_s", seconds(p.jitter)},
        {"loss", p.loss},
        {"queue", queue_json(p.queue)},
        {"codel", p.codel.enabled},
        {"dark", d.dark()}}},
      {"rx_packets", c.rx_packets},
      {"rx_bytes", c.rx_bytes},
      {"tx_packets", c.tx_packets},
      {"tx_bytes", c.tx_bytes},
      {"drops", {{"queue", c.drop_queue}, {"codel", c.drop_codel}, {"loss", c.drop_loss}, {"outage", c.drop_outage}}},
      {"queue_bytes", c.queue_bytes},
      {"queue_packets", c.queue_packets},
      {"queue_hwm_bytes", c.queue_hwm_bytes},
      {"queue_hwm_packets", c.queue_hwm_packets},
      {"frames_read", io.frames_read},
      {"write_errors", io.write_errors},
      {"late_mean_s", io.frames_written ? seconds(io.late_total) / static_cast<double>(io.frames_written) : 0.0},
      {"late_max_s", seconds(io.late_max)},
  };
}

std::string human_bytes(std::uint64_t b) {
  char buf[32];
  if (b >= 10'000'000) std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(b) / 1e6);
  else if (b >= 10'000) std::snprintf(buf, sizeof buf, "%.1f KB", static_cast<double>(b) / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace

nlohmann::json stats_json(const LabModel& lab, const std::vector<IoCounters>& io, std::uint64_t seq,
                          TimePoint now) {
  nlohmann::json links = nlohmann::json::array();
  for (std::size_t i = 0; i < lab.link_count(); ++i) {
    links.push_back({{"name", lab.spec(i).name},
                     {"index", i + 1},
                     {"device", "nl-" + lab.spec(i).name},
                     {"up", direction_json(lab.direction(i, Dir::up), io[i * 2])},
                     {"down", direction_json(lab.direction(i, Dir::down), io[i * 2 + 1])}});
  }
  return {{"seq", seq}, {"time_s", seconds(now.time_since_epoch())}, {"links", links}};
}

std::string stats_text(const LabModel& lab, const std::vector<IoCounters>& io, TimePoint now) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "netlab-emu counters at t=%.3f s (packets are wire packets)\n",
                seconds(now.time_since_epoch()));
  out += line;
  for (std::size_t i = 0; i < lab.link_count(); ++i) {
    for (Dir dir : {Dir::up, Dir::down}) {
      const auto& d = lab.direction(i, dir);
      const auto& c = d.counters();
      auto io_of = [&](Dir x) -> const IoCounters& { return io[i * 2 + static_cast<std::size_t>(x)]; };
      std::snprintf(line, sizeof line,
                    "%-12s %-4s rx %llu pkts %s | tx %llu pkts %s | drops queue %llu codel %llu loss %llu "
                    "outage %llu | queue hwm %s %llu pkts | late mean/max %.0f/%.0f us | write errors %llu%s\n",
                    lab.spec(i).name.c_str(), dir_name(dir), static_cast<unsigned long long>(c.rx_packets),
                    human_bytes(c.rx_bytes).c_str(), static_cast<unsigned long long>(c.tx_packets),
                    human_bytes(c.tx_bytes).c_str(), static_cast<unsigned long long>(c.drop_queue),
                    static_cast<unsigned long long>(c.drop_codel), static_cast<unsigned long long>(c.drop_loss),
                    static_cast<unsigned long long>(c.drop_outage), human_bytes(c.queue_hwm_bytes).c_str(),
                    static_cast<unsigned long long>(c.queue_hwm_packets),
                    io_of(dir).frames_written ? static_cast<double>(io_of(dir).late_total.count()) / 1e3 /
                                                    static_cast<double>(io_of(dir).frames_written)
                                              : 0.0,
                    static_cast<double>(io_of(dir).late_max.count()) / 1e3,
                    static_cast<unsigned long long>(io_of(dir).write_errors),
                    d.dark() ? " | DARK" : "");
      out += line;
    }
  }
  return out;
}

}  // namespace netlab
