// `faster bench`: the plan, the table format (from a constructed report) and a real short CPU run.
#include <gtest/gtest.h>

#include <algorithm>

#include "faster/bench/matrix.h"
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

TEST(Bench, ShortCpuRunWritesTableJsonAndChart) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const auto r = test::run_faster(
      "bench --cpu --epochs 1 --train-limit 256 --test-limit 128 "
      "--blocks 0,0,0 --batch 64 --filters 8,16,32 --out " +
      d.path().string() + test::fashion_mnist_flag());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("short CPU version"), std::string::npos) << r.output;
  const auto md = test::read_file(d / "bench.md");
  EXPECT_NE(md.find("| single, host loader [1] |"), std::string::npos) << md;
  EXPECT_NE(md.find("| single, device loader [1] |"), std::string::npos) << md;
  EXPECT_EQ(md.find("failed"), std::string::npos) << md;
  EXPECT_NE(test::read_file(d / "bench.json").find("median_seconds"), std::string::npos);
  EXPECT_NE(test::read_file(d / "bench.svg").find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace faster::bench
