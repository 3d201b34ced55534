#include "cli/probe_plot.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

namespace braid::cli {

namespace {

// gnuplot strings are double-quoted: a name must not end the string.
std::string quoted(std::string s) {
  for (auto& c : s)
    if (c == '"' || c == '\\' || c == '\n') c = '_';
  return "\"" + s + "\"";
}

// Runs gnuplot with `script` on its stdin (what it says goes to stderr);
// its exit status, or -1.
int run_gnuplot(const std::string& script) {
  FILE* p = ::popen("gnuplot 1>&2", "w");
  if (!p) return -1;
  std::fwrite(script.data(), 1, script.size(), p);
  const int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

std::string plot_unavailable() {
  FILE* p = ::popen("gnuplot -e 'set terminal pngcairo' 2>&1", "r");
  if (!p) return "cannot run gnuplot";
  char buf[256];
  std::string out;
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int st = ::pclose(p);
  if (!WIFEXITED(st) || WEXITSTATUS(st) == 127) return "--plot needs gnuplot (apt-get install gnuplot-nox)";
  if (WEXITSTATUS(st) != 0 || out.find("unknown") != std::string::npos)
    return "--plot needs gnuplot with the pngcairo terminal (apt-get install gnuplot-nox)";
  return {};
}

std::string write_probe_plot(const std::string& file, const std::string& title, const std::vector<PlotSeries>& series,
                             const std::vector<PlotPhase>& phases) {
  std::ostringstream s;
  // One data block per path: time, Mbit/s, RTT; -1 where there is none,
  // which the plot turns into a gap (1/0), so a line never joins across one.
  for (size_t i = 0; i < series.size(); ++i) {
    s << "$path" << i << " << EOD\n";
    for (size_t k = 0; k < series[i].t.size(); ++k) {
      const double m = series[i].mbit[k];
      s << series[i].t[k] << ' ' << (m == m ? m : -1) << ' ' << (series[i].rtt_ms[k] >= 0 ? series[i].rtt_ms[k] : -1)
        << '\n';
    }
    s << "EOD\n";
  }
  s << "set terminal pngcairo size 1280,900 font \"sans,11\"\n"
    << "set output " << quoted(file) << "\n"
    << "set multiplot layout 2,1 title " << quoted(title) << "\n"
    << "set grid\nset key outside right top box\nset xlabel \"time (s)\"\n"
    << "set style line 1 lw 2\n"
    // Log scales: a 1.5 Mbit/s link beside a 300 Mbit/s one, 6 ms beside 250 ms.
    << "set logscale y\n";
  // The phases as shaded bands with their names on top.
  for (size_t k = 0; k < phases.size(); ++k) {
    s << "set object " << k + 1 << " rect from " << phases[k].from << ", graph 0 to " << phases[k].to
      << ", graph 1 back fc rgb \"" << (k % 2 ? "#f2f2f2" : "#e4ecf7") << "\" fs solid 1.0 noborder\n";
    s << "set label " << k + 1 << " " << quoted(phases[k].label) << " at " << (phases[k].from + phases[k].to) / 2
      << ", graph 0.96 center front font \",10\"\n";
  }
  auto plot = [&](int column) {
    s << "plot ";
    for (size_t i = 0; i < series.size(); ++i)
      s << (i ? ", " : "") << "$path" << i << " using 1:($" << column << " > 0 ? $" << column << " : 1/0) with lines lw 2 lc "
        << i + 1 << " title "
        << quoted(series[i].name);
    s << "\n";
  };
  s << "set ylabel \"throughput (Mbit/s, log scale)\"\n";
  plot(2);
  s << "set ylabel \"smoothed round-trip time while it carries (ms, log scale)\"\n";
  plot(3);
  s << "unset multiplot\n";
  const int st = run_gnuplot(s.str());
  if (st != 0) return "gnuplot failed (exit " + std::to_string(st) + ") writing '" + file + "'";
  if (::access(file.c_str(), R_OK) != 0) return "gnuplot wrote no '" + file + "'";
  return {};
}

}  // namespace braid::cli
