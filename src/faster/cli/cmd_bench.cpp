// `faster bench`: runs the benchmark matrix and writes the table (Markdown), JSON and an SVG chart.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "faster/bench/matrix.h"
#include "faster/cli/command.h"
#include "faster/core/env.h"
#include "faster/core/error.h"
#include "faster/core/gpu_info.h"
#include "faster/core/progress.h"

namespace faster::cli {
namespace fs = std::filesystem;
namespace {

struct BenchFlags {
  bench::BenchOptions o;
  bool cpu = false;
  int epochs = -1, repeats = -1;
  int64_t train_limit = -1, test_limit = -1;
};

bench::Run run_once(const bench::Cell& cell, const bench::BenchOptions& o, int index) {
  const std::string stem = (fs::path(o.out_dir) / ("run-" + std::to_string(index))).string();
  const std::string json = stem + ".json", log = stem + ".log";
  fs::remove(json);
  bench::Run run;
  const int code = bench::run_process(o.exe, bench::train_args(cell, o, json), log);
  std::ifstream in(json);
  if (code == 0 && in) {
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) {
      run.ok = true;
      run.seconds = j.value("total_seconds", 0.0);
      run.accuracy = j.value("final_test_accuracy", 0.0);
      return run;
    }
  }
  std::ifstream lf(log);
  std::string line, last;
  while (std::getline(lf, line))
    if (!line.empty()) last = line;
  run.error = "exit " + std::to_string(code) + ": " + last + " (see " + log + ")";
  return run;
}

int run_bench(BenchFlags& f) {
  auto& o = f.o;
  o.gpu = !f.cpu && cuda_device_count() > 0;
  // Without a GPU the default is a short CPU run: minutes, not hours.
  o.epochs = f.epochs > 0 ? f.epochs : (o.gpu ? 5 : 1);
  o.repeats = f.repeats > 0 ? f.repeats : (o.gpu ? 3 : 1);
  o.train_limit = f.train_limit >= 0 ? f.train_limit : (o.gpu ? 0 : 4096);
  o.test_limit = f.test_limit >= 0 ? f.test_limit : (o.gpu ? 0 : 2048);
  if (!o.gpu)
    std::printf(
        "faster bench: no GPU%s, so the short CPU version: %d epoch(s) on %lld train images, "
        "%d run(s) per cell\n",
        f.cpu ? " requested" : " visible", o.epochs, static_cast<long long>(o.train_limit),
        o.repeats);
  o.gpus = std::max(1, cuda_device_count());
  o.exe = self_exe();
  fs::create_directories(o.out_dir);
  bench::Report report;
  report.options = o;
  report.env = env_info();
  const auto cells = bench::plan(o);
  if (cells.empty()) FASTER_THROW("--rows selects no configuration");
  Progress bar("bench", static_cast<int64_t>(cells.size()) * o.repeats, "run");
  int index = 0;
  for (const auto& cell : cells) {
    bench::CellResult result{cell, {}};
    bar.set_suffix(cell.row + " / " + cell.column);
    for (int r = 0; r < o.repeats; ++r) {
      result.runs.push_back(run_once(cell, o, index++));
      bar.add();
      if (!result.runs.back().ok) break;  // a failing configuration fails every time
    }
    report.cells.push_back(result);
  }
  bar.finish();
  const auto md = bench::markdown(report);
  std::printf("\n%s", md.c_str());
  std::ofstream(fs::path(o.out_dir) / "bench.md") << md;
  std::ofstream(fs::path(o.out_dir) / "bench.json") << bench::to_json(report).dump(2) << "\n";
  std::ofstream(fs::path(o.out_dir) / "bench.svg") << bench::svg_chart(report);
  std::printf("\nwrote %s/bench.md, bench.json, bench.svg\n", o.out_dir.c_str());
  int failed = 0;
  for (const auto& c : report.cells)
    if (!c.ok()) {
      std::fprintf(stderr, "faster bench: %s / %s failed: %s\n", c.cell.row.c_str(),
                   c.cell.column.c_str(), c.runs.back().error.c_str());
      ++failed;
    }
  return failed ? 1 : 0;
}

void add_bench(CLI::App& root, int& exit_code) {
  auto f = std::make_shared<BenchFlags>();
  auto* cmd = root.add_subcommand(
      "bench",
      "Run the benchmark matrix (baseline; rows x {plain, +cudnn_benchmark, +AMP, both}; fastest "
      "mode), each configuration as its own 'faster train' process, and write the table as "
      "Markdown, JSON and an SVG chart.  Without a GPU it runs a short CPU version.");
  cmd->add_option("--out", f->o.out_dir, "Folder for bench.md, bench.json, bench.svg and run logs")
      ->capture_default_str();
  cmd->add_option("--data", f->o.data, "Dataset folder passed to 'faster train --data'");
  cmd->add_option("--epochs", f->epochs, "Epochs per run (default 5 on a GPU, 1 on a CPU)");
  cmd->add_option("--batch", f->o.batch, "Batch size per process")->capture_default_str();
  cmd->add_option("--blocks", f->o.blocks, "ThinNet blocks per stage")->capture_default_str();
  cmd->add_option("--filters", f->o.filters, "ThinNet filters per stage")->capture_default_str();
  cmd->add_option("--repeats", f->repeats,
                  "Runs per configuration, median reported (default 3 on a GPU, 1 on a CPU)");
  cmd->add_option("--train-limit", f->train_limit,
                  "Train images per epoch (default all on a GPU, 4096 on a CPU)");
  cmd->add_option("--test-limit", f->test_limit,
                  "Test images (default all on a GPU, 2048 on a CPU)");
  cmd->add_option("--rows", f->o.rows,
                  "Only these rows (separated by ';'): 'single, host loader', 'single, device "
                  "loader', DataParallel, DDP, fast")
      ->delimiter(';');
  cmd->add_flag("--cpu", f->cpu, "Run the CPU version even when a GPU is visible");
  cmd->add_option("--train-args", f->o.extra_args, "Extra arguments for every 'faster train' run")
      ->allow_extra_args();
  cmd->callback([f, &exit_code] { exit_code = run_bench(*f); });
}

}  // namespace
FASTER_REGISTER_COMMAND(20, add_bench);
}  // namespace faster::cli
