// The bench's time-to-accuracy row: `faster train --recipe speedrun --eval-every 1` for a few
// seeds, each timed from process start to the first epoch whose test accuracy reaches the target.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace faster::bench {

struct BenchOptions;

// One evaluated epoch: the process clock when it ended and its test accuracy (%).
struct CurvePoint {
  double seconds = 0, accuracy = 0;
};

// Seconds to the first point at or above `target`; nullopt when none reaches it.
std::optional<double> seconds_to_target(const std::vector<CurvePoint>& curve, double target);

// The evaluated epochs of a `faster train --json` report (epochs without test_accuracy skipped).
std::vector<CurvePoint> curve_of_train_json(const nlohmann::json& j);

// A peer's curve: one "seconds accuracy" pair per line; blank lines and '#' comments skipped.
// Throws naming the file and line for a line that is not a pair, or a file without one.
std::vector<CurvePoint> read_curve(const std::string& path);

struct TtaRun {
  int seed = 0;
  bool ok = false;
  std::vector<CurvePoint> curve;
  double final_accuracy = 0;
  std::string error;  // last line of the log when !ok
  int exit_code = 0;  // the `faster train` child's
};

// A peer's run read from its curve: finished, its final accuracy the curve's last point.
TtaRun peer_run(int seed, std::vector<CurvePoint> curve);

struct TtaRow {
  double target = 0;
  std::vector<TtaRun> runs;  // one per seed
  std::vector<TtaRun> peer;  // the peer's seeds, one curve each; empty: no peer given
  std::string peer_name;

  // The peer's seeds as a row of their own (the same target), for the same summaries.
  TtaRow peer_row() const { return {target, peer, {}, peer_name}; }

  bool ok() const;      // every run finished
  int reached() const;  // runs at the target (a failed run misses)
  // Median over the seeds of the seconds to the target, a miss counting as never; the upper
  // middle for an even count, so nullopt when half or more missed.
  std::optional<double> median_seconds() const;
  double mean_accuracy() const, min_accuracy() const, spread() const;  // of the final accuracy
};

// The `faster train` arguments of one seed's run.
std::vector<std::string> tta_train_args(const BenchOptions& o, int seed, const std::string& json);

std::string tta_markdown(const TtaRow& row);
nlohmann::json tta_json(const TtaRow& row);
// Test accuracy against process seconds: a series per seed, the peer's, and the target.
std::string tta_chart_svg(const TtaRow& row);

}  // namespace faster::bench
