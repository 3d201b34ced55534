// The dashboard's live sampler with a fake receiver and given times: each
// path's rate is the bytes its lanes delivered between two samples over the
// time between them, lanes grouped by local and remote address (ports
// dropped), and each sample says that window — what the charts draw and
// what integration.serve.netlab_browser compares with a sender's --log.
#include "engine/serve/live_sampler.hpp"

#include <gtest/gtest.h>

namespace braid::serve {
namespace {

TEST(LiveSampler, RatePerPathOverEachSamplesOwnWindow) {
  transfer::LiveTransfer t;
  t.label = "recv 'vm'";
  t.total = 100'000'000;
  t.lanes = {{1, "10.0.1.2:7878", "10.0.1.1:40001", 0, true, 4.0},
             {2, "10.0.1.2:7878", "10.0.1.1:40002", 0, true, 6.0},  // a second lane on the same path
             {3, "10.0.2.2:7878", "10.0.2.1:40003", 0, true, 0.0}};
  LiveSampler s;
  s.set_source([&t] { return std::vector<transfer::LiveTransfer>{t}; });
  s.sample(10.0);  // the first look only sets the baseline
  EXPECT_EQ(s.snapshot()[0]["samples"].size(), 0u);

  t.elapsed = 0.5;
  t.lanes[0].bytes = 1'000'000;
  t.lanes[1].bytes = 500'000;
  t.lanes[2].bytes = 250'000;
  s.sample(10.5);
  t.elapsed = 1.25;
  t.lanes[0].bytes += 3'000'000;
  t.lanes[2].bytes += 750'000;
  s.sample(11.25);

  const auto samples = s.snapshot()[0]["samples"];
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_DOUBLE_EQ(samples[0]["t"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(samples[0]["window_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(samples[1]["window_s"].get<double>(), 0.75);
  ASSERT_EQ(samples[0]["paths"].size(), 2u);  // one per path, not per lane
  const auto& a = samples[0]["paths"][0];
  const auto& b = samples[0]["paths"][1];
  EXPECT_EQ(a["path"], "10.0.1.2 -> 10.0.1.1");
  EXPECT_EQ(a["lanes"], 2);
  EXPECT_DOUBLE_EQ(a["rate_bytes_per_sec"].get<double>(), 1'500'000 / 0.5);
  EXPECT_DOUBLE_EQ(a["rtt_ms"].get<double>(), 5.0);  // the mean of its lanes' RTTs
  EXPECT_EQ(b["path"], "10.0.2.2 -> 10.0.2.1");
  EXPECT_DOUBLE_EQ(b["rate_bytes_per_sec"].get<double>(), 250'000 / 0.5);
  EXPECT_DOUBLE_EQ(b["rtt_ms"].get<double>(), 0.0);  // unknown: not drawn
  EXPECT_DOUBLE_EQ(samples[1]["paths"][0]["rate_bytes_per_sec"].get<double>(), 3'000'000 / 0.75);
  EXPECT_DOUBLE_EQ(samples[1]["paths"][1]["rate_bytes_per_sec"].get<double>(), 750'000 / 0.75);

  // The latest sample alone is what SSE pushes.
  EXPECT_EQ(s.latest()[0]["samples"].size(), 1u);
  EXPECT_DOUBLE_EQ(s.latest()[0]["samples"][0]["window_s"].get<double>(), 0.75);
}

}  // namespace
}  // namespace braid::serve
