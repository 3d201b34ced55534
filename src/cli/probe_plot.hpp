// `braid probe --plot FILE.png`: every path's throughput and round trip over
// the probe's phases, drawn by gnuplot (pngcairo). gnuplot is the tool made
// for this (axes, ticks, units, legends, anti-aliased text) and is a Debian
// package the benchmarks already use; braid hands it the samples as a data
// block inside the script on its stdin, no temporary file.
#pragma once

#include <string>
#include <vector>

namespace braid::cli {

struct PlotSeries {
  std::string name;  // the legend: "eth1 -> 10.0.0.2"
  std::vector<double> t, mbit, rtt_ms;  // rtt_ms < 0: none at that time
};

struct PlotPhase {
  std::string label;  // "eth1 alone", "all paths"
  double from = 0, to = 0;
};

/// Whether a gnuplot with the pngcairo terminal can be run; else why not.
std::string plot_unavailable();

/// Writes the PNG; empty on success, else why not.
std::string write_probe_plot(const std::string& file, const std::string& title, const std::vector<PlotSeries>& series,
                             const std::vector<PlotPhase>& phases);

}  // namespace braid::cli
