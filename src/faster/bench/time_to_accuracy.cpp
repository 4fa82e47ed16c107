// Time to accuracy: the seconds-to-target rule, the runs' arguments, and the row's table, JSON
// and chart.
#include "faster/bench/time_to_accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "faster/bench/matrix.h"
#include "faster/core/error.h"
#include "faster/core/line_chart.h"

namespace faster::bench {

std::optional<double> seconds_to_target(const std::vector<CurvePoint>& curve, double target) {
  for (const auto& p : curve)
    if (p.accuracy >= target) return p.seconds;
  return std::nullopt;
}

std::vector<CurvePoint> curve_of_train_json(const nlohmann::json& j) {
  std::vector<CurvePoint> curve;
  for (const auto& e : j.value("epochs", nlohmann::json::array()))
    if (e.contains("test_accuracy") && e.contains("process_seconds"))
      curve.push_back({e["process_seconds"].get<double>(), e["test_accuracy"].get<double>()});
  return curve;
}

std::vector<CurvePoint> read_curve(const std::string& path) {
  std::ifstream in(path);
  if (!in) FASTER_THROW("--tta-peer ", path, ": cannot read");
  std::vector<CurvePoint> curve;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream fields(line);
    CurvePoint p;
    if (!(fields >> p.seconds >> p.accuracy))
      FASTER_THROW("--tta-peer ", path, ":", n, ": expected \"seconds accuracy\", got \"", line,
                   "\"");
    curve.push_back(p);
  }
  if (curve.empty()) FASTER_THROW("--tta-peer ", path, ": no \"seconds accuracy\" line");
  return curve;
}

TtaRun peer_run(int seed, std::vector<CurvePoint> curve) {
  TtaRun r;
  r.seed = seed;
  r.ok = !curve.empty();
  r.final_accuracy = curve.empty() ? 0 : curve.back().accuracy;
  r.curve = std::move(curve);
  return r;
}

bool TtaRow::ok() const {
  return !runs.empty() &&
         std::all_of(runs.begin(), runs.end(), [](const TtaRun& r) { return r.ok; });
}

int TtaRow::reached() const {
  return static_cast<int>(std::count_if(runs.begin(), runs.end(), [&](const TtaRun& r) {
    return seconds_to_target(r.curve, target).has_value();
  }));
}

std::optional<double> TtaRow::median_seconds() const {
  if (runs.empty()) return std::nullopt;
  std::vector<double> s;
  for (const auto& r : runs)
    s.push_back(
        seconds_to_target(r.curve, target).value_or(std::numeric_limits<double>::infinity()));
  std::sort(s.begin(), s.end());
  const double m = s[s.size() / 2];  // the upper middle: half the seeds missing is a miss
  return std::isfinite(m) ? std::optional<double>(m) : std::nullopt;
}

namespace {
std::vector<double> finals(const TtaRow& row) {
  std::vector<double> a;
  for (const auto& r : row.runs)
    if (r.ok) a.push_back(r.final_accuracy);
  return a;
}
}  // namespace

double TtaRow::mean_accuracy() const {
  const auto a = finals(*this);
  double sum = 0;
  for (double v : a) sum += v;
  return a.empty() ? 0 : sum / static_cast<double>(a.size());
}

double TtaRow::min_accuracy() const {
  const auto a = finals(*this);
  return a.empty() ? 0 : *std::min_element(a.begin(), a.end());
}

double TtaRow::spread() const {
  const auto a = finals(*this);
  return a.empty() ? 0
                   : *std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end());
}

std::vector<std::string> tta_train_args(const BenchOptions& o, int seed, const std::string& json) {
  std::vector<std::string> a = {"train", "--recipe", "speedrun",           "--eval-every",
                                "1",     "--seed",   std::to_string(seed), "--json",
                                json};
  const auto data = data_args(o);
  a.insert(a.end(), data.begin(), data.end());
  a.insert(a.end(), o.tta_args.begin(), o.tta_args.end());
  return a;
}

namespace {
std::string seconds_text(std::optional<double> s) {
  if (!s) return "not reached";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", *s);
  return buf;
}
}  // namespace

namespace {
// One table line: a row's seeds summed up.
std::string summary_line(const std::string& label, const TtaRow& row) {
  char buf[160];
  std::snprintf(buf, sizeof buf, " [%zu seeds] | %s | %d/%zu | %.2f %% | %.2f %% | %.2f |\n",
                row.runs.size(), seconds_text(row.median_seconds()).c_str(), row.reached(),
                row.runs.size(), row.mean_accuracy(), row.min_accuracy(), row.spread());
  return "| " + label + buf;
}
}  // namespace

std::string tta_markdown(const TtaRow& row) {
  char buf[256];
  std::ostringstream md;
  std::snprintf(buf, sizeof buf, "%g", row.target);
  const std::string target = buf;
  md << "\ntime to accuracy: `faster train --recipe speedrun --eval-every 1`, seeds 0.."
     << row.runs.size() - 1 << "; seconds from process start to the first epoch at " << target
     << " % test accuracy, median over the seeds (a miss counts as never)\n\n"
     << "| run | seconds to " << target
     << " % | seeds reaching it | final accuracy mean | min | spread "
        "|\n|---|---|---|---|---|---|\n"
     << summary_line("speedrun", row);
  if (!row.peer.empty()) {
    const TtaRow peer = row.peer_row();
    md << summary_line("peer (" + row.peer_name + ")", peer);
    const auto ours = row.median_seconds(), theirs = peer.median_seconds();
    if (ours && theirs) {
      std::snprintf(buf, sizeof buf, "\nfaster / peer, median seconds to %s %%: %.2f\n",
                    target.c_str(), *ours / *theirs);
      md << buf;
    }
  }
  return md.str();
}

namespace {
nlohmann::json curve_json(const std::vector<CurvePoint>& curve) {
  nlohmann::json c = nlohmann::json::array();
  for (const auto& p : curve) c.push_back({p.seconds, p.accuracy});
  return c;
}

nlohmann::json optional_json(std::optional<double> v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
}  // namespace

namespace {
// A row's summary and its runs.
nlohmann::json seeds_json(const TtaRow& row) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : row.runs)
    runs.push_back({{"seed", r.seed},
                    {"ok", r.ok},
                    {"seconds_to_target", optional_json(seconds_to_target(r.curve, row.target))},
                    {"final_test_accuracy", r.final_accuracy},
                    {"curve", curve_json(r.curve)},
                    {"error", r.error}});
  return {{"seeds", row.runs.size()},
          {"ok", row.ok()},
          {"reached", row.reached()},
          {"median_seconds_to_target", optional_json(row.median_seconds())},
          {"mean_final_test_accuracy", row.mean_accuracy()},
          {"min_final_test_accuracy", row.min_accuracy()},
          {"spread", row.spread()},
          {"runs", runs}};
}
}  // namespace

nlohmann::json tta_json(const TtaRow& row) {
  nlohmann::json j = seeds_json(row);
  j["command"] = "faster train --recipe speedrun --eval-every 1";
  j["target"] = row.target;
  if (!row.peer.empty()) {
    j["peer"] = seeds_json(row.peer_row());
    j["peer"]["name"] = row.peer_name;
  }
  return j;
}

std::string tta_chart_svg(const TtaRow& row) {
  ChartPanel panel{"test accuracy (%)", {}};
  double last = 0;
  const auto add = [&](std::string name, const std::vector<CurvePoint>& curve) {
    if (curve.empty()) return;
    ChartSeries s{std::move(name), {}};
    for (const auto& p : curve) s.points.emplace_back(p.seconds, p.accuracy);
    last = std::max(last, curve.back().seconds);
    panel.series.push_back(std::move(s));
  };
  for (const auto& r : row.runs) add("faster seed " + std::to_string(r.seed), r.curve);
  for (const auto& r : row.peer) add("peer seed " + std::to_string(r.seed), r.curve);
  char name[32];
  std::snprintf(name, sizeof name, "target %g %%", row.target);
  panel.series.push_back({name, {{0.0, row.target}, {last, row.target}}});
  return line_chart_svg("time to accuracy: test accuracy against seconds from process start",
                        "seconds from process start", {panel});
}

}  // namespace faster::bench
