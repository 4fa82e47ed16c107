// `faster bench`: the seed's table as code.  Each configuration runs as its own `faster train`
// process (fresh CUDA context, fresh cuDNN caches), several times; the median time is reported.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "faster/bench/time_to_accuracy.h"

namespace faster::bench {

struct BenchOptions {
  std::string exe;  // the faster program to run
  std::string out_dir = "bench-out";
  std::string data;  // passed to train --data when set
  int epochs = 5;
  // `faster train --recipe`: the seed's benchmark on a GPU; the short CPU version trains the CPU
  // recipe's narrower ThinNet (the seed's learns nothing in its few steps).  The sizes are given
  // to every run.
  std::string recipe = "seed";
  int64_t batch = 512;
  std::string blocks = "3,3,2";
  std::string filters = "32,64,128";
  int repeats = 3;
  bool gpu = true;             // false: the short CPU version
  bool cpu_requested = false;  // --cpu: the CPU version on a machine with a GPU too
  int gpus = 1;                // GPUs the parallel rows use
  int64_t train_limit = 0, test_limit = 0;
  std::vector<std::string> rows;        // which rows; empty = all that apply
  std::vector<std::string> extra_args;  // appended to every train command
  // The time-to-accuracy row (time_to_accuracy.h): off while the target is 0.
  double tta_target = 0;
  int tta_seeds = 5;
  std::vector<std::string> tta_peer;  // a peer's "seconds accuracy" curves, one per seed
  std::vector<std::string> tta_args;  // appended to its train commands only
};

// One cell of the table: a row (mode), a column (tricks) and the flags that make it.
struct Cell {
  std::string row, column;
  std::vector<std::string> args;
  int gpus = 1;
};

struct Run {
  bool ok = false;
  double seconds = 0, accuracy = 0;
  std::string error;  // last line of the log when !ok
  int exit_code = 0;  // the `faster train` child's
};

struct CellResult {
  Cell cell;
  std::vector<Run> runs;
  bool ok() const;
  double median_seconds() const;
  double median_accuracy() const;  // accuracy of the median-time run
};

extern const std::vector<std::string> kColumns;  // plain, +cudnn_benchmark, +AMP, +both
extern const std::vector<std::string> kRows;     // every row's name (--rows picks among them)
// The cells to run: baseline, the rows x columns that apply on this machine, and the fastest mode.
std::vector<Cell> plan(const BenchOptions& o);
// The data and device flags every `faster train` the bench starts takes (--data, --device cpu,
// the limits).
std::vector<std::string> data_args(const BenchOptions& o);
// The full `faster train` argument list of a cell.
std::vector<std::string> train_args(const Cell& c, const BenchOptions& o, const std::string& json);

struct Report {
  BenchOptions options;
  nlohmann::json env;
  std::vector<CellResult> cells;
  std::optional<TtaRow> tta;
};

// Every run that failed, as "what failed: error", in the order they ran.
std::vector<std::string> failures(const Report& r);
// bench's exit code: the first failed run's (1 where it has none), else 3 where a run skipped
// bad images (docs/exit_codes.md), else 0.
int exit_code(const Report& r);

std::string markdown(const Report& r);
nlohmann::json to_json(const Report& r);
std::string svg_chart(const Report& r);

// Runs `exe args...` with output to `log`; returns the exit code (128+signal when killed).
int run_process(const std::string& exe, const std::vector<std::string>& args,
                const std::string& log);

}  // namespace faster::bench
