// `faster train`: flags -> TrainOptions, then the trainer; one line per epoch and a summary.
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "faster/cli/command.h"
#include "faster/core/enum_names.h"
#include "faster/core/error.h"
#include "faster/models/thinnet.h"
#include "faster/train/parallel/launch.h"
#include "faster/train/trainer.h"

namespace faster::cli {
namespace {

// The choices of the enum flags that offer part of their enum.
constexpr EnumName<train::Precision> kAmpDtypes[] = {{"fp16", train::Precision::kFloat16},
                                                     {"bf16", train::Precision::kBFloat16}};
constexpr EnumName<data::LastBatch> kTrainLastBatch[] = {{"keep", data::LastBatch::kKeep},
                                                         {"drop", data::LastBatch::kDrop}};
constexpr EnumName<models::Norm> kThinNetNorms[] = {{"batch", models::Norm::kBatch},
                                                    {"none", models::Norm::kNone}};

struct TrainFlags {
  train::TrainOptions o;
  std::string blocks = "3,3,2";
  std::string filters = "32,64,128";
  bool amp = false;
  train::Precision amp_dtype = train::Precision::kFloat16;
  CLI::Option* amp_dtype_flag = nullptr;
  bool fast = false;
  bool no_fuse = false;
  std::string json;
  int nproc = 0;
};

// This program's arguments, without its name, from /proc (the launcher restarts it with them).
std::vector<std::string> own_args() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  if (!args.empty()) args.erase(args.begin());
  return args;
}

void add_train_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
  cmd->add_option("--data", o.data,
                  "Dataset folder: Fashion-MNIST/MNIST idx files (gzip or raw) or CIFAR-10 binary "
                  "batches (data_batch_1.bin ... test_batch.bin)")
      ->capture_default_str();
  cmd->add_option("--device", o.device, "auto (a GPU if one is visible), cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd->add_option("--epochs", o.epochs, "Epochs; each trains on the whole train split, then tests")
      ->capture_default_str();
  cmd->add_option("--batch", o.batch, "Batch size per process (per GPU with DDP)")
      ->capture_default_str();
  cmd->add_option("--lr", o.sgd.lr, "SGD learning rate")->capture_default_str();
  cmd->add_option("--momentum", o.sgd.momentum, "SGD momentum")->capture_default_str();
  cmd->add_option("--weight-decay", o.sgd.weight_decay, "SGD weight decay (L2)")
      ->capture_default_str();
  cmd->add_flag("--nesterov", o.sgd.nesterov, "Nesterov momentum");
  cmd->add_option("--blocks", f.blocks,
                  "ThinNet duplicate convs per stage (filters 32,64,128); 3,3,2 = 11 conv layers")
      ->capture_default_str();
  cmd->add_option("--filters", f.filters, "ThinNet filters per stage (the seed: 32,64,128)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed for weights and the per-epoch shuffle")
      ->capture_default_str();
  cmd->add_flag("--cudnn-benchmark", o.cudnn_benchmark,
                "Let cuDNN time its algorithms (cudnn.benchmark) for the full-batch shape; a short "
                "last training batch uses cuDNN's heuristics and short test batches are padded");
  cmd->add_flag("--cudnn-benchmark-all-shapes", o.cudnn_benchmark_all_shapes,
                "With --cudnn-benchmark: tune every new shape, short batches too (PyTorch's "
                "behaviour; slower on short runs)");
  cmd->add_option("--cudnn-benchmark-limit", o.cudnn_benchmark_limit,
                  "With --cudnn-benchmark: how many algorithms cuDNN times per shape (fewer: "
                  "cheaper first steps, maybe slower later ones; 0: all)")
      ->capture_default_str();
  cmd->add_flag("--amp", f.amp, "Mixed precision: autocast the forward pass (see --amp-dtype)");
  f.amp_dtype_flag = add_enum_option(cmd, "--amp-dtype", f.amp_dtype, kAmpDtypes,
                  "fp16 (with a dynamic grad scaler that skips steps with inf/NaN gradients) or "
                  "bf16 (no scaler)");
  cmd->add_flag("--channels-last", o.channels_last, "NHWC memory format for weights and inputs");
  add_enum_option(cmd, "--loader", o.loader, train::kLoaderNames,
                  "host: worker threads fill pinned batches copied on a side stream; device: the "
                  "whole dataset lives on the device as uint8 and batches are gathered there");
  cmd->add_option("--workers", o.workers, "Host loader threads")->capture_default_str();
  add_enum_option(cmd, "--last-batch", o.last_batch, kTrainLastBatch,
                  "Short last training batch of an epoch: keep (train on it) or drop");
  cmd->add_flag("--cuda-graph", o.cuda_graph,
                "Capture the train and test steps as CUDA graphs (static shapes; short batches "
                "run eagerly, test batches are padded)");
  cmd->add_flag("--fast", f.fast,
                "Fastest mode: --loader device --amp --amp-dtype bf16 --channels-last --cuda-graph "
                "--last-batch drop (one static shape per step; --amp-dtype fp16 overrides bf16)");
  cmd->add_option("--train-limit", o.train_limit, "Use only the first N training images (0 = all)");
  cmd->add_option("--test-limit", o.test_limit, "Use only the first N test images (0 = all)");
  cmd->add_option("--log-dir", o.log_dir, "Write metrics as JSON lines to DIR/metrics.jsonl");
  cmd->add_option("--save", o.save,
                  "Write the trained weights as a PyTorch state_dict (torch.load reads it)");
  cmd->add_option("--json", f.json, "Write the run's report (options, per-epoch metrics, time) as JSON");
  add_enum_option(cmd, "--norm", o.norm, kThinNetNorms,
                  "ThinNet normalization after each conv+ReLU: batch or none");
  cmd->add_flag("--no-fuse", f.no_fuse,
                "Run ReLU and BatchNorm as LibTorch's separate ops instead of faster's fused CUDA "
                "kernels (one read of the conv output per pass; used on CUDA by default)");
  auto* par = cmd->add_option_group("Parallel training");
  add_enum_option(par, "--parallel", o.parallel, train::kParallelNames,
                  "none; dp: DataParallel, one process over --gpus GPUs; ddp: DistributedDataParallel, "
                  "a process per GPU (or CPU process with Gloo), started by --nproc, torchrun "
                  "(--no-python) or Slurm (srun)");
  par->add_option("--nproc", f.nproc,
                  "ddp: start this many local ranks and wait for them (like torch.distributed.launch); "
                  "without it the ranks come from torchrun's or Slurm's environment");
  par->add_option("--gpus", o.gpus, "dp: GPUs to use (default: all visible)");
  par->add_option("--bucket-mb", o.bucket_mb,
                  "ddp: gradient bucket size in MB; buckets are all-reduced while backward runs")
      ->capture_default_str();
  par->add_flag("--sync-bn", o.sync_bn, "ddp: SyncBatchNorm (batch statistics over all ranks)");
  par->add_option("--dist-timeout", o.dist_timeout_s,
                  "ddp: seconds to wait for the other ranks (rendezvous and each collective)")
      ->capture_default_str();
}

int run_train(TrainFlags& f) {
  auto& o = f.o;
  if (f.nproc != 0) {
    if (o.parallel != train::Parallel::kDdp) FASTER_THROW("--nproc needs --parallel ddp");
    if (std::getenv("RANK") || std::getenv("SLURM_PROCID"))
      FASTER_THROW("--nproc given inside an already launched job (RANK or SLURM_PROCID is set)");
    train::LaunchOptions lo;
    lo.nproc = f.nproc;
    lo.exe = self_exe();
    lo.args = train::without_nproc(own_args());
    return train::launch_local(lo);
  }
  o.blocks = models::parse_int_list(f.blocks, "--blocks");
  o.filters = models::parse_int_list(f.filters, "--filters");
  o.fused = !f.no_fuse;
  if (f.fast) {
    train::apply_fast_mode(o);
    if (f.amp_dtype_flag->count() > 0) o.precision = f.amp_dtype;
  } else if (f.amp) {
    o.precision = f.amp_dtype;
  }
  const auto report = train::train(o, [&](const train::EpochStats& e) {
    std::printf("epoch %d/%d  train loss %.4f  test loss %.4f  test acc %.2f%%  %.2fs\n", e.epoch,
                o.epochs, e.train_loss, e.test_loss, e.test_accuracy, e.seconds);
    std::fflush(stdout);
  });
  std::printf("done: %d epochs in %.2fs on %s (%.0f train images/s), final test accuracy %.2f%%\n",
              o.epochs, report.total_seconds, report.device.c_str(),
              report.train_images_per_second, report.epochs.back().test_accuracy);
  if (!f.json.empty()) {
    std::ofstream out(f.json);
    out << report.to_json().dump(2) << "\n";
    if (!out) FASTER_THROW("--json ", f.json, ": cannot write");
  }
  return 0;
}

void add_train(CLI::App& root, int& exit_code) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = root.add_subcommand(
      "train",
      "Train ThinNet on a small dataset (default: Fashion-MNIST from Debian's "
      "dataset-fashion-mnist); train + test every epoch, SGD + cross-entropy.");
  add_train_flags(cmd, *flags);
  cmd->callback([flags, &exit_code] { exit_code = run_train(*flags); });
}

}  // namespace
FASTER_REGISTER_COMMAND(10, add_train);
}  // namespace faster::cli
