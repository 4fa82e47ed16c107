// Usage errors through the program: every numeric flag outside its range, every malformed value and
// every conflict ends with one line naming the flag, exit code 2, before any work starts (the paths
// given do not exist: a check that looked at them first would say so instead).  And the exit-code
// table of docs/exit_codes.md, one test per class.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <vector>

#include "support/test_support.h"

namespace faster {
namespace {

constexpr int kExitError = 1, kExitUsage = 2, kExitBadInput = 3;

struct Case {
  std::string args;    // after `faster`
  std::string needle;  // in the one-line message
};

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// Runs the cases a few at a time (each is a fresh process that loads LibTorch).
std::vector<test::RunResult> run_all(const std::vector<Case>& cases) {
  std::vector<test::RunResult> results;
  constexpr size_t kParallel = 4;
  for (size_t i = 0; i < cases.size(); i += kParallel) {
    std::vector<std::future<test::RunResult>> running;
    for (size_t j = i; j < std::min(cases.size(), i + kParallel); ++j)
      running.push_back(std::async(std::launch::async, test::run_faster, cases[j].args));
    for (auto& r : running) results.push_back(r.get());
  }
  return results;
}

void expect_usage_errors(const std::vector<Case>& cases) {
  const auto results = run_all(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& r = results[i];
    const auto& c = cases[i];
    EXPECT_EQ(r.exit_code, kExitUsage) << c.args << "\n" << r.output;
    EXPECT_EQ(lines(r.output), 1) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("faster: error: ", 0), 0u) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.needle), std::string::npos)
        << c.args << ": expected '" << c.needle << "' in: " << r.output;
  }
}

const std::string kNoData = " --data /nonexistent/faster-test-data";

TEST(UsageErrors, TrainRangesAndCombinations) {
  const std::string t = "train --device cpu";
  const test::TempDir not_small;  // a folder: JPEG data as far as the flags go
  const std::string j = t + " --data " + not_small.path().string();
  expect_usage_errors({
      {t + " --epochs 0", "--epochs must be between 1 and 1000000 (got 0)"},
      {t + " --batch 0", "--batch must be between 1 and 1048576 (got 0)"},
      {t + " --batch 2000000", "--batch must be between 1 and 1048576"},
      {t + " --workers -1", "--workers must be between 0 and 1024 (got -1)"},
      {t + " --workers 5000", "--workers must be between 0 and 1024"},
      {t + " --loader device --workers 2",
       "--workers sets the host loader's threads; --loader device gathers batches on the device "
       "with none"},
      {t + " --lr inf", "--lr must be a positive finite number (got inf)"},
      {t + " --lr -0.1", "--lr must be a positive finite number"},
      {t + " --keep-checkpoints", "--keep-checkpoints needs --checkpoint FILE"},
      {t + " --momentum 1.5", "--momentum must be in [0, 1)"},
      {t + " --weight-decay -1", "--weight-decay must be a finite number >= 0"},
      {t + " --weight-decay inf", "--weight-decay must be a finite number >= 0 (got inf)"},
      {t + " --amp-dtype bf16", "--amp-dtype needs --amp (or --fast): without it the run is fp32"},
      {t + " --lr-gamma 0.5", "--lr-gamma needs a decay by steps"},
      {t + " --res-step 16", "--res-step needs --res-end"},
      {t + " --bucket-mb 10", "--bucket-mb needs --parallel ddp"},
      {t + " --dist-timeout 5", "--dist-timeout needs --parallel ddp"},
      {t + " --decode nvjpeg --data " + not_small.path().string(),
       "--decode nvjpeg needs a CUDA device, and --device cpu was given"},
      {t + " --decode cpu", "--decode is for JPEG data (folders or LMDB); "},
      {t + " --nvjpeg-threads 2", "--nvjpeg-threads is for JPEG data"},
      {t + " --crop-scale 0.5", "--crop-scale is the random-resized crop's"},
      {t + " --muon-lr -0.1", "--muon-lr must be a finite number >= 0 (got -0.1; 0: no Muon)"},
      {t + " --muon-lr 0.2 --muon-momentum 1", "--muon-momentum must be in [0, 1)"},
      {t + " --muon-lr 0.2 --muon-steps 0", "--muon-steps must be between 1 and 10"},
      {t + " --muon-momentum 0.5", "--muon-momentum needs --muon-lr (a rate above 0"},
      {t + " --muon-steps 5", "--muon-steps needs --muon-lr"},
      {t + " --model speednet --muon-lr 0.2 --train-whitening",
       "--muon-lr with speednet needs its stem frozen"},
      {t + " --train-limit -5", "--train-limit must be at least 0 (got -5)"},
      {t + " --test-limit -1", "--test-limit must be at least 0"},
      {t + " --label-smoothing 1", "--label-smoothing must be in [0, 1)"},
      {t + " --ema 1.5", "--ema must be in (0, 1)"},
      {j + " --cpu-share 2", "--cpu-share must be between 0 and 1 (got 2)"},
      {t + " --cpu-share half",
       "--cpu-share must be auto or a number between 0 and 1 (got 'half')"},
      {j + " --nvjpeg-threads 0", "--nvjpeg-threads must be between 1 and 64"},
      {t + " --eval-every 0", "--eval-every must be at least 1"},
      {j + " --crop-scale 0", "--crop-scale must be in (0, 1]"},
      {t + " --val-res 4", "--val-res must be between 8 and 4096"},
      {t + " --val-resize 4", "--val-resize must be between 8 and 8192"},
      {t + " --warmup-epochs -1", "--warmup-epochs must be between 0 and --epochs"},
      {t + " --warmup-start 2", "--warmup-start must be between 0 and 1"},
      {t + " --min-lr 2", "--min-lr must be between 0 and 1"},
      {t + " --lr-decay step --lr-steps 2 --epochs 3 --lr-gamma 0", "--lr-gamma must be in (0, 1]"},
      {t + " --lr-decay step", "--lr-decay step needs --lr-steps"},
      {t + " --lr-decay step --lr-steps 9 --epochs 3", "--lr-steps: epoch 9 is outside 2..3"},
      {t + " --res 4", "--res must be 0 (a small dataset as stored) or between 8 and 4096 (got 4)"},
      {t + " --res 5000", "--res must be 0 (a small dataset as stored) or between 8 and 4096"},
      {t + " --res 32 --res-end 5000 --res-ramp 1:2 --epochs 3", "--res-end must be between 8"},
      {t + " --res 32 --res-end 64 --res-ramp 1:2 --epochs 3 --res-step 0",
       "--res-step must be between 1 and 512"},
      {t + " --translate 17", "--translate must be between 0 and 16 (got 17)"},
      {t + " --translate -1", "--translate must be between 0 and 16"},
      {t + " --flip sideways", "--flip"},
      {t + " --res 32 --res-end 64 --res-ramp 2:1 --epochs 3", "--res-ramp 2:1 must name two"},
      {t + " --res-ramp x", "--res-ramp must be two epochs A:B"},
      {t + " --blocks 3,a,2", "--blocks: '3,a,2' is not a comma-separated list"},
      {t + " --blocks 1,1", "--blocks has 2 stages but --filters 3"},
      {t + " --model resnet18 --blocks 1,1,1", "--blocks shapes thinnet and speednet"},
      {t + " --gpus 2", "--gpus needs --parallel dp"},
      {t + " --parallel ddp --nproc 0", "--nproc must be between 1 and 1024 (got 0)"},
      // A folder that is no small dataset (a missing one is named as missing first).
      {t + " --res 0 --data " + not_small.path().string(),
       "--res 0 (as stored) is for small datasets"},
      {t + " --val-res 0", "--val-res must be between 8 and 4096 (got 0)"},
      {t + " --val-resize 0", "--val-resize must be between 8 and 8192 (got 0)"},
      {t + " --model speednet --stem-dims -1", "--stem-dims must be at least 0 (got -1)"},
      {t + " --seed -1", "--seed must be an integer from 0 to 18446744073709551615 (got '-1')"},
      {t + " --seed 1e23", "--seed must be an integer from 0"},
      {t + " --seed 18446744073709551616", "--seed must be an integer from 0"},
      {t + " --blocks 100,0,0", "--blocks must be between 0 and 64 (got 100)"},
      {t + " --filters 0,8,8", "--filters must be between 1 and 4096 (got 0)"},
      {t + " --cudnn-benchmark-limit -1", "--cudnn-benchmark-limit must be at least 0"},
      {t + " --parallel ddp --bucket-mb 0", "--bucket-mb must be between"},
      {t + " --parallel ddp --dist-timeout 0", "--dist-timeout must be between 1 and 86400"},
      {t + " --parallel dp --gpus -1", "--gpus must be between 0 and 1024"},
      {t + " --parallel ddp --nproc -3", "--nproc must be between 1 and 1024 (got -3)"},
      {t + " --nproc 2", "--nproc needs --parallel ddp"},
      {t + " --parallel ddp --nproc 2 --epochs 0", "--epochs must be between 1 and 1000000"},
      {t + " --nesterov --momentum 0", "--nesterov needs a non-zero --momentum"},
      {t + " --sync-bn", "--sync-bn needs --parallel ddp"},
      {t + " --model resnet18 --norm none", "--norm none leaves out ThinNet's BatchNorm"},
      {t + " --cudnn-benchmark-all-shapes", "--cudnn-benchmark-all-shapes needs --cudnn-benchmark"},
      {t + " --parallel ddp --cuda-graph", "--cuda-graph cannot capture DDP's all-reduce"},
      {t + " --last-batch pad", "--last-batch"},
      {t + " --loader gpu", "--loader"},
      {t + " --gpu-wait sleep", "--gpu-wait"},
      {t + " --res 32 --res-end 64", "--res-end needs --res-ramp A:B"},
      {t + " --res 32 --res-ramp 1:2", "--res-ramp needs --res-end"},
      {t + " --lr-steps 2", "--lr-steps needs --lr-decay step"},
      {t + " --alternate-flips", "--alternate-flips alternates --flip's flips, and flips are off"},
      {t + " --res 32 --flip on --alternate-flips", "crops flip at random"},
      {t + " --recipe fast", "--recipe"},
      {t + " --model resnet7", "--model 'resnet7' is not a model faster knows"},
      {"train --device tpu", "--device 'tpu' is not a device"},
      {t + " --epochs zero", "--epochs"},
  });
}

TEST(UsageErrors, LoadRangesBeforeTheDatasetIsRead) {
  const std::string l = "load /nonexistent/faster-test-tree --device cpu";
  expect_usage_errors({
      {l + " --epochs 0", "--epochs must be between 1 and 1000000 (got 0)"},
      {l + " --batches 0", "--batches must be between 1 and"},
      {l + " --warmup -1", "--warmup must be between 0 and"},
      {l + " --cpu-share 2", "--cpu-share must be between 0 and 1 (got 2)"},
      {l + " --size 100000", "--size must be between 8 and 4096 (got 100000)"},
      {l + " --size 4", "--size must be between 8 and 4096"},
      {l + " --batch 0", "--batch must be between 1 and 1048576"},
      {l + " --workers -1", "--workers must be between 0 and 1024"},
      {l + " --val --val-size 4", "--val-size must be between 8 and 4096"},
      {l + " --val --val-resize 100", "--val-resize must be between 224 and 8192 (got 100)"},
      {l + " --val-resize 300", "--val-resize is the validation transform's: it needs --val"},
      {l + " --val-size 300", "--val-size is the validation transform's: it needs --val"},
      {l + " --val --size 128", "--size is the training crop's; --val crops to --val-size"},
      {l + " --decode-only --batches 3", "--batches is the pipeline's; --decode-only times one"},
      {l + " --decode-only --floor-images 0", "--floor-images 0 skips it"},
      {l + " --cpu-share 0.5", "--cpu-share splits the images between the CPU and nvJPEG"},
      {l + " --nvjpeg-threads 0", "--nvjpeg-threads must be between 1 and 64"},
      {l + " --floor-images -1", "--floor-images must be at least 0"},
      {l + " --epochs 2 --batches 3", "--epochs excludes --batches"},
      {l + " --decode gpu", "--decode"},
  });
}

TEST(UsageErrors, EvalAndBenchRanges) {
  test::TempDir t;
  const std::string e = "eval --device cpu --weights /nonexistent/w.pt" + kNoData;
  const std::string b = "bench --cpu --out " + (t / "bench").string();
  expect_usage_errors({
      {e + " --batch 0", "--batch must be between 1 and 1048576"},
      {e + " --workers -1", "--workers must be between 0 and 1024"},
      {e + " --val-res 4", "--val-res must be between 8 and 4096"},
      {e + " --val-resize 4", "--val-resize must be between 8 and 8192"},
      {e + " --val-res 0", "--val-res must be between 8 and 4096 (got 0)"},
      {e + " --decode nvjpeg", "--decode nvjpeg needs a CUDA device, and --device cpu was given"},
      {b + " --epochs 0", "--epochs must be between 1 and 1000000 (got 0)"},
      {b + " --repeats 0", "--repeats must be between 1 and 1000"},
      {b + " --train-limit -1", "--train-limit must be at least 0"},
      {b + " --test-limit -1", "--test-limit must be at least 0"},
      {b + " --batch 0", "--batch must be at least 1"},
      {b + " --rows nonsense", "--rows: 'nonsense' is not a row"},
      {b + " --rows tta", "--rows tta needs --tta-target"},
      {b + " --tta-target 0", "--tta-target"},
      {b + " --tta-target 101", "--tta-target"},
      {b + " --tta-seeds 0", "--tta-seeds"},
  });
  EXPECT_FALSE(std::filesystem::exists(t / "bench")) << "bench wrote before refusing its flags";
}

TEST(UsageErrors, ToolRangesBeforeTheTreeIsRead) {
  test::TempDir t;
  const std::string pack = "pack --src /nonexistent/src --out " + (t / "db").string();
  const std::string resize =
      "resize --src /nonexistent/src --dst " + (t / "dst").string() + " --max-size 64";
  const std::string exp = "export --out " + (t / "tree").string() + kNoData;
  const std::string synth = "synth --out " + (t / "synth").string();
  expect_usage_errors({
      {pack + " --max-size 64 --quality 0", "--quality must be between 1 and 100 (got 0)"},
      {pack + " --quality 80", "--quality is that of downscaled images: it needs --max-size"},
      {"pack --verify /nonexistent/db --max-size 64", "drop --src, --out, --max-size"},
      {pack + " --max-size 64 --quality 101", "--quality must be between 1 and 100"},
      {pack + " --max-size -1", "--max-size must be between 1 and 65500"},
      {pack + " --max-size 0", "--max-size must be between 1 and 65500 (got 0)"},
      {pack + " --workers -1", "--workers must be between 0 and 1024"},
      {"pack --verify /nonexistent/db --workers 5000", "--workers must be between 0 and 1024"},
      {"pack --verify /nonexistent/db --src /nonexistent/src", "drop --src, --out"},
      {"pack", "faster pack needs --src DIR and --out DB"},
      {resize.substr(0, resize.size() - 2) + "0", "--max-size must be between 1 and 65500"},
      {resize + " --quality 0", "--quality must be between 1 and 100"},
      {resize + " --workers -1", "--workers must be between 0 and 1024"},
      {"resize --src /nonexistent/src", "--dst is required"},
      {synth + " --seed -5", "--seed must be an integer from 0"},
      {exp + " --quality 0", "--quality must be between 1 and 100"},
      {exp + " --limit -1", "--limit must be at least 0"},
      {exp + " --workers -1", "--workers must be between 0 and 1024"},
      {synth + " --classes 0", "--classes must be between 1 and 100000"},
      {synth + " --images 0", "--images must be between 1 and 1000000"},
      {synth + " --val -1", "--val must be between 0 and 1000000"},
      {synth + " --quality 0", "--quality must be between 1 and 100"},
      {synth + " --workers -1", "--workers must be between 0 and 1024"},
  });
  for (const char* out : {"db", "dst", "tree", "synth"})
    EXPECT_FALSE(std::filesystem::exists(t / out)) << out << " written before refusing its flags";
}

// One test per class of docs/exit_codes.md.
TEST(ExitCodes, DoneIsZero) {
  EXPECT_EQ(test::run_faster("env").exit_code, 0);
  EXPECT_EQ(test::run_faster("train --help").exit_code, 0);
  EXPECT_EQ(test::run_faster("--version").exit_code, 0);
}

TEST(ExitCodes, ErrorsMetWhileWorkingAreOne) {
  // A dataset that is not there, a device this machine lacks, a tree that is not there.
  auto r = test::run_faster("train --device cpu" + kNoData);
  EXPECT_EQ(r.exit_code, kExitError) << r.output;
  r = test::run_faster("train --device cuda:7");
  EXPECT_EQ(r.exit_code, kExitError) << r.output;
  r = test::run_faster("load /nonexistent/faster-test-tree --device cpu");
  EXPECT_EQ(r.exit_code, kExitError) << r.output;
  r = test::run_faster("pack --verify /nonexistent/db");
  EXPECT_EQ(r.exit_code, kExitError) << r.output;
  // An output that cannot be written is found before the work (load's --json was after it).
  test::TempDir t;
  test::write_file(t / "file", "x");
  const auto json = (t / "file" / "r.json").string();
  r = test::run_faster("load /nonexistent/faster-test-tree --device cpu --json " + json);
  EXPECT_EQ(r.exit_code, kExitError) << r.output;
  EXPECT_NE(
      r.output.find("--json " + json + ": " + (t / "file").string() + " is a file, not a folder"),
      std::string::npos)
      << r.output;
}

TEST(ExitCodes, EveryKindOfUsageErrorIsTwo) {
  expect_usage_errors({
      {"frobnicate", "unknown command 'frobnicate'"},  // an unknown command
      {"train --no-such-flag", "--no-such-flag"},      // an unknown flag
      {"train --epochs zero", "--epochs"},             // a value that does not parse
      {"load /nonexistent/faster-test-tree --size 100000", "--size"},  // a number out of range
      {"train --device cpu --nesterov --momentum 0", "--nesterov"},    // flags that conflict
      {"resize --dst /nonexistent/dst --max-size 8", "--src"},         // a required flag missing
      {"train --loader gpu", "--loader must be host, device or synthetic (got 'gpu')"},
  });
  const auto none = test::run_faster("");
  EXPECT_EQ(none.exit_code, kExitUsage) << none.output;  // no command at all
}

TEST(ExitCodes, DoneWithBadInputSkippedIsThree) {
  test::TempDir t;
  std::filesystem::create_directories(t / "src" / "class");
  test::write_file(t / "src" / "class" / "broken.jpg", "not a JPEG");
  const auto r = test::run_faster("resize --src " + (t / "src").string() + " --dst " +
                                  (t / "dst").string() + " --max-size 16");
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
}

}  // namespace
}  // namespace faster
