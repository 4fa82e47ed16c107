// `faster bench`: the plan, the table format (from a constructed report) and a real short CPU run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "faster/bench/matrix.h"
#include "faster/core/error.h"
#include "support/test_support.h"

namespace faster::bench {
namespace {

CellResult result(const std::string& row, const std::string& col, std::vector<double> seconds,
                  double acc) {
  CellResult c{{row, col, {}, 1}, {}};
  for (double s : seconds) c.runs.push_back({true, s, acc, ""});
  return c;
}

TEST(Bench, PlanCoversTheMatrix) {
  BenchOptions o;
  o.gpus = 4;
  const auto gpu = plan(o);
  EXPECT_EQ(gpu.size(), 4u * 4 + 1);  // single host/device, DP, DDP rows x 4 columns + fastest mode
  EXPECT_EQ(gpu.back().row, "fast");
  const auto& ddp = gpu[3 * 4 + 2];  // DDP, +AMP
  EXPECT_EQ(ddp.row, "DDP");
  EXPECT_EQ(ddp.gpus, 4);
  const auto ddp_args = train_args(ddp, o, "x.json");
  EXPECT_NE(std::find(ddp_args.begin(), ddp_args.end(), "--nproc"), ddp_args.end());
  EXPECT_NE(std::find(ddp_args.begin(), ddp_args.end(), "--amp"), ddp_args.end());
  o.gpu = false;
  const auto cpu = plan(o);
  EXPECT_EQ(cpu.size(), 2u * 2);  // no cuDNN columns, no fast mode
  const auto args = train_args(cpu[1], o, "x.json");
  EXPECT_NE(std::find(args.begin(), args.end(), "bf16"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "cpu"), args.end());
  o.rows = {"fast"};
  o.gpu = true;
  EXPECT_EQ(plan(o).size(), 1u);
  o.rows = {"DataParallel"};
  EXPECT_EQ(plan(o)[0].gpus, 4);
}

TEST(Bench, MedianIsTheMiddleRun) {
  auto c = result("r", "plain", {3.0, 1.0, 2.0}, 80);
  c.runs[2].accuracy = 85;  // the 2.0 s run
  EXPECT_DOUBLE_EQ(c.median_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(c.median_accuracy(), 85);
  c.runs.push_back({false, 0, 0, "boom"});
  EXPECT_FALSE(c.ok());
}

TEST(Bench, TableHasBaselineRowsColumnsAndFastLine) {
  Report r;
  r.options.repeats = 3;
  r.env = {{"cuda", {{"gpus", {{{"name", "Test GPU"}}}}}}};
  for (size_t i = 0; i < kColumns.size(); ++i) {
    r.cells.push_back(result("single, host loader", kColumns[i], {10.0 - i}, 86));
    if (i != 1) r.cells.push_back(result("single, device loader", kColumns[i], {5.0 - i}, 86));
    auto ddp = result("DDP", kColumns[i], {2.0}, 86);
    ddp.cell.gpus = 8;
    r.cells.push_back(ddp);
  }
  r.cells.push_back(result("fast", "fast", {1.0}, 86.5));
  const auto md = markdown(r);
  EXPECT_NE(md.find("on Test GPU"), std::string::npos) << md;
  EXPECT_NE(md.find("filters 32,64,128"), std::string::npos) << md;
  EXPECT_NE(md.find("baseline (single GPU, host loader, fp32): 10.00 s (86.0 %)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| mode [GPUs] | plain | +cudnn_benchmark | +AMP | +cudnn_benchmark +AMP |"),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find("| single, host loader [1] | 10.00 s (86.0 %) | 9.00 s (86.0 %) | 8.00 s (86.0 %) | "
              "7.00 s (86.0 %) |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| single, device loader [1] | 5.00 s (86.0 %) | n/a | 3.00 s"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| DDP [8] | 2.00 s (86.0 %) |"), std::string::npos) << md;
  EXPECT_NE(md.find("fastest mode (--fast) [1]: 1.00 s (86.5 %), 10.0x the baseline"),
            std::string::npos)
      << md;
  const auto svg = svg_chart(r);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 0, true);
  size_t rects = 0;
  for (size_t p = svg.find("<rect"); p != std::string::npos; p = svg.find("<rect", p + 1)) ++rects;
  EXPECT_EQ(rects, r.cells.size());
  const auto j = to_json(r);
  EXPECT_EQ(j["cells"].size(), r.cells.size());
  EXPECT_DOUBLE_EQ(j["cells"].back()["median_seconds"].get<double>(), 1.0);
}

TEST(TimeToAccuracy, SecondsAreThoseOfTheFirstEpochAtTheTarget) {
  const std::vector<CurvePoint> curve = {
      {3.0, 80.0}, {4.0, 93.9}, {5.0, 94.0}, {6.0, 93.5}, {7.0, 95}};
  EXPECT_DOUBLE_EQ(seconds_to_target(curve, 94).value(), 5.0);  // reached at the third epoch
  EXPECT_DOUBLE_EQ(seconds_to_target(curve, 50).value(), 3.0);  // at the first
  EXPECT_FALSE(seconds_to_target(curve, 95.5).has_value());     // never
  EXPECT_FALSE(seconds_to_target({}, 10).has_value());          // a failed run misses
  // From `faster train --json`: epochs without a test pass are not points.
  const auto j = nlohmann::json::parse(R"({"epochs": [{"process_seconds": 2.5},
      {"process_seconds": 3.5, "test_accuracy": 91.0}]})");
  const auto parsed = curve_of_train_json(j);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_DOUBLE_EQ(parsed[0].seconds, 3.5);
  EXPECT_DOUBLE_EQ(parsed[0].accuracy, 91.0);
}

TtaRun tta_run(int seed, std::vector<CurvePoint> curve) {
  TtaRun r;
  r.seed = seed;
  r.ok = true;
  r.final_accuracy = curve.back().accuracy;
  r.curve = std::move(curve);
  return r;
}

TEST(TimeToAccuracy, RowCountsMissesAsNeverInTheMedian) {
  TtaRow row{94, {}, {}, ""};
  row.runs.push_back(tta_run(0, {{2, 90}, {3, 94.5}}));
  row.runs.push_back(tta_run(1, {{2, 90}, {3, 93.0}}));  // missed
  row.runs.push_back(tta_run(2, {{2, 94.2}, {3, 95.0}}));
  EXPECT_EQ(row.reached(), 2);
  EXPECT_DOUBLE_EQ(row.median_seconds().value(), 3.0);  // 2, 3, never
  EXPECT_NEAR(row.mean_accuracy(), (94.5 + 93.0 + 95.0) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(row.min_accuracy(), 93.0);
  EXPECT_DOUBLE_EQ(row.spread(), 2.0);
  row.runs.push_back(tta_run(3, {{2, 50}}));  // half missed: the (upper) median is a miss
  EXPECT_FALSE(row.median_seconds().has_value());
  row.runs.pop_back();
  row.peer = {peer_run(0, {{1.5, 92.0}, {2.5, 94.1}}),
              peer_run(1, {{1.5, 93.0}, {2.5, 93.5}, {3.5, 94.0}})};
  row.peer_name = "peer_s0 .. peer_s1";
  Report r;
  r.options.gpu = false;
  r.env = {{"cpu", {{"model", "Test CPU"}}}};
  r.cells.push_back(result("single, host loader", "plain", {10.0}, 86));
  r.tta = row;
  const auto md = markdown(r);
  EXPECT_NE(md.find("| single, host loader [1] | 10.00 s (86.0 %) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| speedrun [3 seeds] | 3.00 s | 2/3 | 94.17 % | 93.00 % | 2.00 |"),
            std::string::npos)
      << md;
  // The peer's two seeds: 2.5 and 3.5 s, the upper middle 3.5; faster's 3.0 over it.
  EXPECT_NE(md.find("| peer (peer_s0 .. peer_s1) [2 seeds] | 3.50 s | 2/2 | 94.05 % | 94.00 % | "
                    "0.10 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("faster / peer, median seconds to 94 %: 0.86"), std::string::npos) << md;
  const auto j = to_json(r)["time_to_accuracy"];
  EXPECT_DOUBLE_EQ(j["target"].get<double>(), 94);
  EXPECT_EQ(j["reached"], 2);
  EXPECT_DOUBLE_EQ(j["median_seconds_to_target"].get<double>(), 3.0);
  EXPECT_TRUE(j["runs"][1]["seconds_to_target"].is_null());
  EXPECT_DOUBLE_EQ(j["peer"]["median_seconds_to_target"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(j["peer"]["runs"][0]["seconds_to_target"].get<double>(), 2.5);
  EXPECT_EQ(j["peer"]["reached"], 2);
  EXPECT_EQ(j["peer"]["name"], "peer_s0 .. peer_s1");
  // One SVG: the matrix's bars, then the curves (3 seeds, the peer's 2, the target line).
  const auto svg = svg_chart(r);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("<rect x=\"330\""), std::string::npos) << svg;  // a bar
  EXPECT_NE(svg.find("seconds from process start"), std::string::npos) << svg;
  size_t lines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1))
    ++lines;
  EXPECT_EQ(lines, 6u);
  for (const char* name : {"faster seed 2", "peer seed 1", "target 94 %"})
    EXPECT_NE(svg.find(name), std::string::npos) << name;
}

TEST(TimeToAccuracy, PeerCurveIsReadAndBadLinesAreNamed) {
  test::TempDir d;
  std::ofstream(d / "good.txt") << "# seconds accuracy\n1.5 92\n\n2.5 94.1\n";
  const auto c = read_curve((d / "good.txt").string());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_DOUBLE_EQ(c[1].seconds, 2.5);
  EXPECT_DOUBLE_EQ(c[1].accuracy, 94.1);
  // Refused, the message naming the file (and the line): no point at all, a line not a pair.
  for (const auto& [file, text, named] :
       {std::tuple{"empty.txt", "# seconds accuracy\n\n", "empty.txt: no"},
        std::tuple{"bad.txt", "1.5 92\nacc=93\n", "bad.txt:2"}}) {
    std::ofstream(d / file) << text;
    try {
      read_curve((d / file).string());
      ADD_FAILURE() << file << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
}

TEST(TimeToAccuracy, BadTargetOrSeedsIsAUsageError) {
  for (const char* flags : {"--tta-target 0", "--tta-target 100.5", "--tta-target -3",
                            "--tta-target 94 --tta-seeds 0", "--tta-seeds 3"}) {
    const auto r = test::run_faster(std::string("bench --cpu ") + flags);
    EXPECT_GE(r.exit_code, 2) << flags << ": "
                              << r.output;  // CLI11's usage codes; 1 is a failed run
    EXPECT_NE(r.output.find("faster: error: --tta-"), std::string::npos)
        << flags << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << flags << ": " << r.output;
  }
}

TEST(Bench, ShortCpuRunWritesTableJsonAndChart) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  // The short CPU version trains the CPU recipe (its sizes: none given here): 64 steps of 128
  // reach about 74 % on the first 8,192 images (measured, 2 cores), so each cell scores well
  // above chance (10 %) and a run that stopped learning fails here.
  const auto r =
      test::run_faster("bench --cpu --epochs 1 --train-limit 8192 --test-limit 512 --out " +
                       d.path().string() + test::fashion_mnist_flag());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("short CPU version: the CPU recipe"), std::string::npos) << r.output;
  const auto md = test::read_file(d / "bench.md");
  EXPECT_NE(md.find("ThinNet (blocks 0,0,0, filters 16,32,64), batch 128, recipe cpu"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| single, host loader [1] |"), std::string::npos) << md;
  EXPECT_NE(md.find("| single, device loader [1] |"), std::string::npos) << md;
  EXPECT_EQ(md.find("failed"), std::string::npos) << md;
  const auto j = nlohmann::json::parse(test::read_file(d / "bench.json"));
  EXPECT_EQ(j["options"]["recipe"], "cpu");
  ASSERT_EQ(j["cells"].size(), 4u) << j["cells"].dump();
  for (const auto& c : j["cells"])
    for (const auto& run : c["runs"])
      EXPECT_GT(run["test_accuracy"].get<double>(), 50.0) << c.dump();
  EXPECT_NE(test::read_file(d / "bench.svg").find("<svg"), std::string::npos);
}

TEST(Bench, ShortCpuRunWithTheTimeToAccuracyRow) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  // Tiny: a few hundred images, speedrun at a tenth of its width; 30 % is reached in an epoch.  In
  // 16 steps this narrow a net needs its stem trained (--train-whitening): frozen, one seed of
  // the two ended at 22.7 %; the row's counting is what is tested here.
  // A peer of two seeds' curves, one reaching 30 % at 7 s, the other never.
  std::ofstream(d / "p_s0.txt") << "5 20\n7 31\n";
  std::ofstream(d / "p_s1.txt") << "5 20\n7 25\n";
  const auto r = test::run_faster(
      "bench --cpu --rows 'single, host loader;tta' --epochs 1 --train-limit 512 --test-limit 256 "
      "--blocks 0,0,0 --batch 64 --filters 8,16,32 --tta-target 30 --tta-seeds 2 "
      "--tta-args='--filters 8,16,32 --epochs 2 --batch 64 --train-whitening' --tta-peer " +
      (d / "p_s0.txt").string() + " " + (d / "p_s1.txt").string() + " --out " + d.path().string() +
      test::fashion_mnist_flag());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto md = test::read_file(d / "bench.md");
  EXPECT_NE(md.find("| single, host loader [1] |"), std::string::npos) << md;
  EXPECT_NE(md.find("| run | seconds to 30 % | seeds reaching it |"), std::string::npos) << md;
  EXPECT_NE(md.find("| speedrun [2 seeds] | "), std::string::npos) << md;
  EXPECT_NE(md.find(" | 2/2 | "), std::string::npos) << md;
  EXPECT_NE(md.find("| peer (p_s0 .. p_s1) [2 seeds] | not reached | 1/2 | 28.00 % | 25.00 % | "
                    "6.00 |"),
            std::string::npos)
      << md;
  const auto all = nlohmann::json::parse(test::read_file(d / "bench.json"));
  // The options say how to run it again.
  EXPECT_EQ(all["options"]["rows"], nlohmann::json({"single, host loader", "tta"}));
  EXPECT_EQ(all["options"]["tta_args"], nlohmann::json({"--filters", "8,16,32", "--epochs", "2",
                                                        "--batch", "64", "--train-whitening"}));
  EXPECT_EQ(all["options"]["tta_seeds"], 2);
  EXPECT_EQ(all["options"]["tta_peer"].size(), 2u);
  EXPECT_EQ(all["options"]["cpu_requested"], true);
  const auto& j = all["time_to_accuracy"];
  EXPECT_EQ(j["seeds"], 2);
  EXPECT_EQ(j["reached"], 2);
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["curve"].size(), 2u) << run;  // --eval-every 1: both epochs
    const double s = run["seconds_to_target"], first = run["curve"][0][0];
    EXPECT_GE(s, first);  // the process clock, start-up included
    EXPECT_GT(first, 0.0);
  }
  EXPECT_GT(j["median_seconds_to_target"].get<double>(), 0.0);
  EXPECT_GE(j["min_final_test_accuracy"].get<double>(), 30.0);
  const auto svg = test::read_file(d / "bench.svg");
  EXPECT_NE(svg.find("test accuracy (%)"), std::string::npos) << svg;
  EXPECT_NE(svg.find("faster seed 1"), std::string::npos) << svg;
  EXPECT_NE(svg.find("peer seed 1"), std::string::npos) << svg;
  EXPECT_NE(svg.find("seconds from process start"), std::string::npos) << svg;
}

// bench's exit code is the first failed run's (a killed run's 137 was 1), else 3 where runs only
// skipped bad images (that was 0), and every failure is listed in order.
TEST(Bench, ExitCodeIsTheFirstFailedRunsElseThreeForSkippedImages) {
  Report r;
  r.cells.push_back(result("single, host loader", "plain", {1.0}, 90));
  EXPECT_EQ(exit_code(r), 0);
  r.cells.back().runs.back().exit_code = 3;  // done, bad images skipped
  EXPECT_EQ(exit_code(r), 3);
  EXPECT_TRUE(failures(r).empty());
  CellResult killed{{"DDP", "+AMP", {}, 2}, {}};
  killed.runs.push_back({false, 0, 0, "exit 137: (see run-1.log)", 137});
  r.cells.push_back(killed);
  r.tta = TtaRow{94, {}, {}, ""};
  TtaRun diverged;
  diverged.seed = 4;
  diverged.error = "exit 1: training diverged";
  diverged.exit_code = 1;
  r.tta->runs.push_back(diverged);
  EXPECT_EQ(exit_code(r), 137);
  EXPECT_EQ(failures(r), (std::vector<std::string>{
                             "DDP / +AMP failed: exit 137: (see run-1.log)",
                             "time to accuracy, seed 4 failed: exit 1: training diverged"}));
  r.cells.pop_back();
  EXPECT_EQ(exit_code(r), 1);
  // A run that exited 3 but wrote no report failed: 1, not "done, images skipped".
  r.tta->runs.back().exit_code = 3;
  EXPECT_EQ(exit_code(r), 1);
}

// A run that fails is named by the child's error line, not its hint; --train-args takes one
// string, as --tta-args.
// Data bench's matrix cannot train on is refused before any run.
TEST(Bench, FailedRunsExitCodeAndOtherData) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const auto r = test::run_faster(
      "bench --cpu --epochs 1 --train-limit 512 --test-limit 128 --rows 'single, host loader' "
      "--train-args='--lr 1e6 --seed 3' --out " +
      (d / "out").string() + test::fashion_mnist_flag());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("single, host loader / plain failed: exit 1: training diverged in "
                          "epoch 1"),
            std::string::npos)
      << r.output;
  EXPECT_NE(test::read_file(d / "out" / "run-0.log").find("SGD lr 1e+06"), std::string::npos);
  const auto folder = test::run_faster("bench --cpu --out " + (d / "out2").string() + " --data " +
                                       d.path().string());
  EXPECT_EQ(folder.exit_code, 1) << folder.output;
  EXPECT_NE(folder.output.find("is not a small dataset: bench's matrix trains ThinNet"),
            std::string::npos)
      << folder.output;
  EXPECT_FALSE(std::filesystem::exists(d / "out2" / "run-0.log"));
}

// Killed, bench takes its running `faster train` with it (the run went on alone, holding its
// GPU, until it finished).
TEST(Bench, KilledBenchTakesItsRunWithIt) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const std::string json = (d / "out" / "run-0.json").string();
  const auto runs = [&json] {  // the processes whose command line names the run's report
    std::vector<pid_t> pids;
    for (const auto& p : std::filesystem::directory_iterator("/proc")) {
      std::ifstream in(p.path() / "cmdline", std::ios::binary);
      const std::string line{std::istreambuf_iterator<char>(in), {}};
      if (line.find(json) != std::string::npos)
        pids.push_back(std::atoi(p.path().filename().c_str()));
    }
    return pids;
  };
  const auto running = [&] { return !runs().empty(); };
  const int code = test::signal_when(
      std::string(FASTER_BIN) +
          " bench --cpu --epochs 100000 --train-limit 512 --test-limit 128 "
          "--rows 'single, host loader' --out " +
          (d / "out").string() + test::fashion_mnist_flag(),
      d / "log", [&](pid_t) { return running(); }, SIGKILL);
  EXPECT_EQ(code, 128 + SIGKILL) << test::read_file(d / "log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(running()) << "the run outlived bench";
  for (pid_t p : runs()) ::kill(p, SIGKILL);  // none left running on a failure
}

}  // namespace
}  // namespace faster::bench
