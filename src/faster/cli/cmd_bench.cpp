// `faster bench`: runs the benchmark matrix and writes the table (Markdown), JSON and an SVG chart.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "faster/bench/matrix.h"
#include "faster/cli/command.h"
#include "faster/core/env.h"
#include "faster/core/error.h"
#include "faster/core/gpu_info.h"
#include "faster/core/progress.h"
#include "faster/data/sources/array_dataset.h"
#include "faster/tools/file_io.h"
#include "faster/train/options.h"

namespace faster::cli {
namespace fs = std::filesystem;
namespace {

struct BenchFlags {
  bench::BenchOptions o;
  bool cpu = false;
  int epochs = 0, repeats = 0;
  int64_t train_limit = 0, test_limit = 0;
  std::string train_args, tta_args;  // split on spaces into o.extra_args, o.tta_args
  CLI::App* cmd = nullptr;
};

// The error, or "" for a run that wrote its report: `train`'s exit code and its log's last line.
// A usage error is in the flags bench passes on, the same for every run: it is bench's own.
std::string run_error(int code, bool have_json, const std::string& log) {
  // 3: done, but bad images were skipped (the child's warnings say which): a result all the same.
  if ((code == 0 || code == kExitBadInput) && have_json) return "";
  // The child's error line (its HINT follows it), else its log's last line.
  const std::string prefix = "faster: error: ";
  std::ifstream lf(log);
  std::string line, last, error;
  while (std::getline(lf, line)) {
    if (!line.empty()) last = line;
    if (line.rfind(prefix, 0) == 0) error = line.substr(prefix.size());
  }
  if (!error.empty()) last = error;
  if (code == kExitUsage) FASTER_USAGE_ERROR(last);
  return "exit " + std::to_string(code) + ": " + last + " (see " + log + ")";
}

// One `faster train` child: its arguments (given the path of its --json report) run with the
// output in OUT_DIR/NAME.log; its report, and the error (or "") that run_error makes of it.
struct TrainChild {
  nlohmann::json report;
  std::string error;
  int code = 0;
};
TrainChild run_train(const bench::BenchOptions& o, const std::string& name,
                     const std::function<std::vector<std::string>(const std::string&)>& args) {
  const std::string stem = (fs::path(o.out_dir) / name).string();
  const std::string json = stem + ".json", log = stem + ".log";
  fs::remove(json);
  const int code = bench::run_process(o.exe, args(json), log);
  std::ifstream in(json);
  TrainChild child;
  child.report = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
  child.error = run_error(code, child.report.is_object(), log);
  child.code = code;
  return child;
}

bench::Run run_once(const bench::Cell& cell, const bench::BenchOptions& o, int index) {
  const auto child = run_train(o, "run-" + std::to_string(index), [&](const std::string& json) {
    return bench::train_args(cell, o, json);
  });
  bench::Run run;
  run.error = child.error;
  run.exit_code = child.code;
  if (!run.error.empty()) return run;
  run.ok = true;
  run.seconds = child.report.value("total_seconds", 0.0);
  run.accuracy = child.report.value("final_test_accuracy", 0.0);
  return run;
}

bench::TtaRun run_tta(const bench::BenchOptions& o, int seed) {
  const auto child = run_train(o, "tta-seed-" + std::to_string(seed), [&](const std::string& json) {
    return bench::tta_train_args(o, seed, json);
  });
  bench::TtaRun run;
  run.seed = seed;
  run.error = child.error;
  run.exit_code = child.code;
  if (!run.error.empty()) return run;
  run.ok = true;
  run.curve = bench::curve_of_train_json(child.report);
  run.final_accuracy = child.report.value("final_test_accuracy", 0.0);
  return run;
}

// The flags' ranges, before any run starts (each run would otherwise fail the same way).
void validate(const BenchFlags& f) {
  const auto given = [&](const char* flag) { return f.cmd->get_option(flag)->count() > 0; };
  if (given("--epochs")) check_range("--epochs", f.epochs, 1, kMaxEpochs);
  if (given("--repeats")) check_range("--repeats", f.repeats, 1, 1000);
  if (given("--train-limit")) check_at_least("--train-limit", f.train_limit, 0);
  if (given("--test-limit")) check_at_least("--test-limit", f.test_limit, 0);
  check_at_least("--batch", f.o.batch, 1);  // the rest (its upper bound, --blocks, --filters)
                                            // the first run checks: see run_error
  std::string rows;
  for (const auto& r : bench::kRows) rows += (rows.empty() ? "" : "; ") + r;
  for (const auto& row : f.o.rows)
    if (std::find(bench::kRows.begin(), bench::kRows.end(), row) == bench::kRows.end())
      FASTER_USAGE_ERROR("--rows: '", row, "' is not a row (rows: ", rows, ")");
  if (std::find(f.o.rows.begin(), f.o.rows.end(), "tta") != f.o.rows.end() && !(f.o.tta_target > 0))
    FASTER_USAGE_ERROR("--rows tta needs --tta-target, the accuracy its seconds are counted to");
  tools::check_output_dir(f.o.out_dir, "--out");
  // The matrix is the seed's: ThinNet on a small dataset held in memory (so is the speedrun row).
  const std::string data = f.o.data.empty() ? data::kDefaultSmallDataset : f.o.data;
  std::error_code ec;
  if (!fs::exists(data, ec))
    throw Error("--data " + data + " does not exist",
                "Debian's Fashion-MNIST: apt install dataset-fashion-mnist");
  if (!data::is_small_dataset(data))
    throw Error("--data " + data +
                    " is not a small dataset: bench's matrix trains ThinNet on Fashion-MNIST, "
                    "MNIST or CIFAR-10 (their idx files or binary batches)",
                "time a ResNet on JPEG folders or LMDB with 'faster train --json', the data "
                "pipeline alone with 'faster load'");
}

int run_bench(BenchFlags& f) {
  validate(f);
  auto& o = f.o;
  o.gpu = !f.cpu && cuda_device_count() > 0;
  o.cpu_requested = f.cpu;
  // Without a GPU the default is a short CPU run: minutes, not hours.
  const auto given = [&](const char* flag) { return f.cmd->get_option(flag)->count() > 0; };
  o.epochs = given("--epochs") ? f.epochs : (o.gpu ? 5 : 1);
  o.repeats = given("--repeats") ? f.repeats : (o.gpu ? 3 : 1);
  o.train_limit = given("--train-limit") ? f.train_limit : (o.gpu ? 0 : 8192);
  o.test_limit = given("--test-limit") ? f.test_limit : (o.gpu ? 0 : 2048);
  if (!o.gpu) {  // the CPU recipe, as `train` picks without a GPU, in the sizes not given
    o.recipe = "cpu";
    const auto cpu = train::recipe_options(train::Recipe::kCpu);
    if (!given("--batch")) o.batch = cpu.batch;
    if (!given("--blocks")) o.blocks = comma_list(cpu.blocks);
    if (!given("--filters")) o.filters = comma_list(cpu.filters);
  }
  if (!o.gpu)
    std::printf(
        "faster bench: no GPU%s, so the short CPU version: the CPU recipe, %d epoch(s) on %lld "
        "train images, %d run(s) per cell\n",
        f.cpu ? " requested" : " visible", o.epochs, static_cast<long long>(o.train_limit),
        o.repeats);
  for (const auto& [text, words] :
       {std::pair{&f.train_args, &o.extra_args}, std::pair{&f.tta_args, &o.tta_args}}) {
    std::istringstream in(*text);
    for (std::string w; in >> w;) words->push_back(w);
  }
  o.gpus = std::max(1, cuda_device_count());
  o.exe = self_exe();
  const auto cells = bench::plan(o);
  const bool tta = o.tta_target > 0 && (o.rows.empty() || std::find(o.rows.begin(), o.rows.end(),
                                                                    "tta") != o.rows.end());
  if (cells.empty() && !tta) FASTER_THROW("--rows selects no configuration this machine can run");
  fs::create_directories(o.out_dir);
  bench::Report report;
  report.options = o;
  report.env = env_info();
  if (tta) {
    report.tta = bench::TtaRow{o.tta_target, {}, {}, ""};
    // The peer's curves are read before the runs: a bad file fails in a second, not an hour.
    for (const auto& path : o.tta_peer)
      report.tta->peer.push_back(
          bench::peer_run(static_cast<int>(report.tta->peer.size()), bench::read_curve(path)));
    if (!o.tta_peer.empty()) {
      report.tta->peer_name = fs::path(o.tta_peer.front()).stem().string();
      if (o.tta_peer.size() > 1)
        report.tta->peer_name += " .. " + fs::path(o.tta_peer.back()).stem().string();
    }
  }
  Progress bar("bench", static_cast<int64_t>(cells.size()) * o.repeats + (tta ? o.tta_seeds : 0),
               "run");
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
  if (tta) {
    bar.set_suffix("time to accuracy");
    for (int seed = 0; seed < o.tta_seeds; ++seed) {
      report.tta->runs.push_back(run_tta(o, seed));
      bar.add();
    }
  }
  bar.finish();
  const auto md = bench::markdown(report);
  std::printf("\n%s", md.c_str());
  std::ofstream(fs::path(o.out_dir) / "bench.md") << md;
  std::ofstream(fs::path(o.out_dir) / "bench.json") << bench::to_json(report).dump(2) << "\n";
  std::ofstream(fs::path(o.out_dir) / "bench.svg") << bench::svg_chart(report);
  std::printf("\nwrote %s/bench.md, bench.json, bench.svg\n", o.out_dir.c_str());
  for (const auto& failure : bench::failures(report))
    std::fprintf(stderr, "faster bench: %s\n", failure.c_str());
  const int code = bench::exit_code(report);
  if (code == kExitBadInput)
    std::fprintf(stderr, "faster bench: runs skipped bad images (their logs say which)\n");
  return code;
}

void add_bench(CLI::App& root, int& exit_code) {
  auto f = std::make_shared<BenchFlags>();
  auto* cmd = root.add_subcommand(
      "bench",
      "Run the benchmark matrix (baseline; rows x {plain, +cudnn_benchmark, +AMP, both}; fastest "
      "mode), each configuration as its own 'faster train' process, and write the table as "
      "Markdown, JSON and an SVG chart.  Without a GPU it runs a short CPU version.");
  f->cmd = cmd;
  cmd->add_option("--out", f->o.out_dir, "Folder for bench.md, bench.json, bench.svg and run logs")
      ->capture_default_str();
  cmd->add_option("--data", f->o.data,
                  "A small dataset's folder (Fashion-MNIST, MNIST or CIFAR-10) passed to 'faster "
                  "train --data' (default: train's, Debian's Fashion-MNIST)");
  add_epochs_option(cmd, f->epochs, "Epochs per run (default 5 on a GPU, 1 on a CPU)");
  // The sizes default to the seed's on a GPU, the CPU recipe's on a CPU.
  const auto cpu = train::recipe_options(train::Recipe::kCpu);
  const auto on_each = [](const std::string& gpu, const std::string& cpu) {
    return " (default " + gpu + " on a GPU, the CPU recipe's " + cpu + " on a CPU)";
  };
  cmd->add_option(
      "--batch", f->o.batch,
      "Batch size per process" + on_each(std::to_string(f->o.batch), std::to_string(cpu.batch)));
  cmd->add_option("--blocks", f->o.blocks,
                  "ThinNet blocks per stage" + on_each(f->o.blocks, comma_list(cpu.blocks)));
  cmd->add_option("--filters", f->o.filters,
                  "ThinNet filters per stage" + on_each(f->o.filters, comma_list(cpu.filters)));
  cmd->add_option("--repeats", f->repeats,
                  "Runs per configuration, median reported (default 3 on a GPU, 1 on a CPU)");
  cmd->add_option("--train-limit", f->train_limit,
                  "Train images per epoch (default all on a GPU, 8192 on a CPU: the CPU recipe's "
                  "64 steps, about 70 % on Fashion-MNIST)");
  cmd->add_option("--test-limit", f->test_limit,
                  "Test images (default all on a GPU, 2048 on a CPU)");
  cmd->add_option("--rows", f->o.rows,
                  "Only these rows (separated by ';'): 'single, host loader', 'single, device "
                  "loader', DataParallel, DDP, fast, tta (the time-to-accuracy row)")
      ->delimiter(';');
  cmd->add_flag("--cpu", f->cpu, "Run the CPU version even when a GPU is visible");
  cmd->add_option("--train-args", f->train_args,
                  "Extra arguments for every 'faster train' run, as one string (as --tta-args): "
                  "--train-args=\"--lr 0.02 --seed 3\"");
  // A percentage in (0, 100]: CLI11's Range includes its lower end.
  const CLI::Validator percent(
      [](std::string& s) {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        return end != s.c_str() && *end == 0 && v > 0 && v <= 100
                   ? std::string()
                   : s + " is not a percentage in (0, 100]";
      },
      "(0,100]");
  auto* target =
      cmd->add_option("--tta-target", f->o.tta_target,
                      "Add the time-to-accuracy row: seconds from process start until "
                      "'faster train --recipe speedrun --eval-every 1' reaches this test "
                      "accuracy (%), for --tta-seeds seeds; its chart joins bench.svg")
          ->check(percent);
  cmd->add_option("--tta-seeds", f->o.tta_seeds, "Seeds (0..N-1) of the time-to-accuracy row")
      ->check(CLI::Validator(
          [](std::string& s) {
            char* end = nullptr;
            const long v = std::strtol(s.c_str(), &end, 10);
            return end != s.c_str() && *end == 0 && v >= 1 ? std::string()
                                                           : s + " is not at least 1";
          },
          ">=1"))
      ->needs(target)
      ->capture_default_str();
  cmd->add_option("--tta-peer", f->o.tta_peer,
                  "A peer's accuracy against process seconds, one file per seed (lines \"seconds "
                  "accuracy\", e.g. scripts/speedrun_peer.py --curve), tabled (median seconds to "
                  "the target, the seeds reaching it, faster's ratio) and plotted beside the row")
      ->needs(target);
  cmd->add_option("--tta-args", f->tta_args,
                  "Extra arguments for the time-to-accuracy row's 'faster train' runs only, as one "
                  "string: --tta-args=\"--epochs 10 --lr 0.6\"")
      ->needs(target);
  cmd->callback([f, &exit_code] { exit_code = run_bench(*f); });
}

}  // namespace
FASTER_REGISTER_COMMAND(20, add_bench);
}  // namespace faster::cli
