// What a run writes: nothing is replaced without a word.  An existing --checkpoint of another run,
// of a finished run or of this run's saved epochs, and a --save or --json that is not this run's
// own (another run's weights, a JPEG of the data, a text file) are refused before training, the
// file left byte for byte, the message naming --resume and --overwrite; this run's own files are
// written again; --overwrite replaces; every output's missing folders are made.  Saved weights
// record how they were trained: faster eval scores them at their run's resolution, unasked.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "faster/train/checkpoint.h"
#include "support/test_support.h"

namespace faster::train {
namespace {
namespace fs = std::filesystem;

// A ThinNet epoch on 512 Fashion-MNIST images: a second or two on the CPU.
std::string tiny(const std::string& flags) {
  return "train --device cpu --recipe cpu --train-limit 512 --test-limit 256" +
         test::fashion_mnist_flag() + " " + flags;
}

void expect_refused(const std::string& command, const fs::path& file,
                    const std::vector<std::string>& says) {
  const std::string before = test::read_file(file);
  const auto r = test::run_faster(command);
  EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.output;
  for (const auto& s : says)
    EXPECT_NE(r.output.find(s), std::string::npos) << s << "\n" << r.output;
  EXPECT_EQ(r.output.find("epoch 1/"), std::string::npos) << "trained before refusing";
  EXPECT_EQ(test::read_file(file), before) << file << " changed";
}

TEST(Outputs, NothingIsReplacedWithoutAWord) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  const auto c = t / "c.ckpt", w = t / "w.pt", j = t / "r.json";
  const std::string outs =
      " --checkpoint " + c.string() + " --save " + w.string() + " --json " + j.string();
  auto r = test::run_faster(tiny("--epochs 2 --keep-checkpoints" + outs));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The finished run's checkpoint, then its first epoch's copy (this run, unfinished).
  expect_refused(tiny("--epochs 2" + outs), c,
                 {"--checkpoint " + c.string() + " holds this run, finished",
                  "--resume " + c.string() + " --epochs N trains it on", "--overwrite"});
  expect_refused(tiny("--epochs 2 --checkpoint " + c.string() + ".epoch1"), t / "c.ckpt.epoch1",
                 {"holds this run's saved epochs: a faster checkpoint of thinnet (1 of 2 epochs)",
                  "--resume " + c.string() + ".epoch1 goes on from there"});
  // Another run's: other settings, another model.
  expect_refused(tiny("--epochs 2 --batch 64 --checkpoint " + c.string()), c,
                 {"of another run (batch 64 (was 128))"});
  expect_refused(
      tiny("--epochs 2 --batch 64 --save " + w.string()), w,
      {"--save " + w.string() + " holds weights faster saved for thinnet of another run"});
  expect_refused(tiny("--epochs 2 --batch 64 --json " + j.string()), j,
                 {"holds a faster train report of thinnet of another run"});
  // Not faster's at all: a JPEG of the data, a text file.
  const auto jpeg = t / "data.jpg", text = t / "notes.txt";
  test::write_file(jpeg, std::string("\xFF\xD8\xFF\xE0", 4) + std::string(60, 'x'));
  test::write_file(text, "my notes\n");
  expect_refused(tiny("--save " + jpeg.string()), jpeg, {"holds a JPEG image", "--overwrite"});
  expect_refused(tiny("--save " + text.string()), text, {"holds a file faster did not write"});
  // This run's own files are written again (a re-run of the same command line; a bare resume of a
  // finished run trained on); --overwrite replaces another's.
  r = test::run_faster(tiny("--epochs 2 --save " + w.string() + " --json " + j.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = test::run_faster(tiny("--epochs 2 --batch 64 --overwrite" + outs));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = test::run_faster(tiny("--save " + text.string() + " --overwrite"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(test::read_file(text), "my notes\n");
}

TEST(Outputs, EveryOutputMakesItsMissingFolders) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  const auto run = t / "runs" / "new";
  auto r = test::run_faster(tiny(
      "--epochs 1 --log-dir " + run.string() + " --checkpoint " + (run / "c.ckpt").string() +
      " --save " + (t / "w" / "x" / "w.pt").string() + " --json " + (t / "j" / "r.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& f : {run / "c.ckpt", run / "metrics.jsonl", t / "w/x/w.pt", t / "j/r.json"})
    EXPECT_TRUE(fs::is_regular_file(f)) << f;
  // A folder's place taken by a file: refused before training, as every output flag is.
  test::write_file(t / "afile", "x");
  for (const char* flag : {"--save", "--checkpoint", "--json"}) {
    r = test::run_faster(tiny(std::string(flag) + " " + (t / "afile" / "o").string()));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find((t / "afile").string() + " is a file, not a folder"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("epoch 1/"), std::string::npos) << r.output;
  }
}

// A checkpoint with one byte of a tensor changed (its zip entry's CRC-32 no longer matches) is
// refused by eval and by --resume, naming the entry, where LibTorch's reader took it as it was.
TEST(Outputs, ADamagedCheckpointIsRefusedByEvalAndResume) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  const auto c = t / "c.ckpt";
  auto r = test::run_faster(tiny("--epochs 2 --checkpoint " + c.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // A byte in the middle of the largest tensor's data (found by its bytes in the file).
  torch::Tensor largest;
  for (const auto& kv : read_state_dict(c))
    if (!largest.defined() || kv.value().numel() > largest.numel()) largest = kv.value();
  const auto data = largest.contiguous();
  std::string bytes = test::read_file(c);
  const auto at = bytes.find(std::string(static_cast<const char*>(data.data_ptr()), data.nbytes()));
  ASSERT_NE(at, std::string::npos);
  bytes[at + data.nbytes() / 2] ^= 0x01;
  test::write_file(c, bytes);
  for (const std::string& command :
       {"eval --device cpu --weights " + c.string() + test::fashion_mnist_flag(),
        tiny("--epochs 3 --resume " + c.string())}) {
    r = test::run_faster(command);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.output;
    EXPECT_NE(r.output.find(c.string() + ": its entry archive/"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("does not match its CRC-32"), std::string::npos) << r.output;
  }
}

// faster eval of the weights a 28x28 ThinNet run saved, on that data exported to JPEG: scored at
// 28 px, as its checkpoint is (it once took 224 px: 36 % in 79 s), with the same accuracy.
TEST(Outputs, SavedWeightsAreScoredAsTheirRunTestedThem) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  auto r = test::run_faster(tiny("--epochs 1 --save " + (t / "w.pt").string() + " --checkpoint " +
                                 (t / "c.ckpt").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& jpeg = test::exported_fashion_mnist(200);
  const auto scored = [&](const fs::path& weights) {
    const auto e = test::run_faster("eval --device cpu --weights " + weights.string() + " --data " +
                                    jpeg.string() + " --json " + (t / "e.json").string());
    EXPECT_EQ(e.exit_code, 0) << e.output;
    EXPECT_EQ(e.output.find("records no resolution"), std::string::npos) << e.output;
    return nlohmann::json::parse(test::read_file(t / "e.json"));
  };
  const auto saved = scored(t / "w.pt"), checkpoint = scored(t / "c.ckpt");
  EXPECT_EQ(saved["res"], 28);
  EXPECT_EQ(saved["top1"], checkpoint["top1"]);
  EXPECT_NEAR(saved["loss"].get<double>(), checkpoint["loss"].get<double>(), 1e-6);
}

}  // namespace
}  // namespace faster::train
