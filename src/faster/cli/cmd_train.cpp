// `faster train`: flags -> TrainOptions (train_flags.cpp, train_recipe.cpp: a recipe fills what
// the user did not say), then the trainer, or the local ranks of a DDP job; a progress bar per
// epoch, one line per epoch and a summary.
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "faster/cli/train_flags.h"
#include "faster/core/early_context.h"
#include "faster/data/sources/array_dataset.h"
#include "faster/tools/file_io.h"
#include "faster/train/parallel/launch.h"

namespace faster::cli {
namespace {

// This program's arguments, without its name, from /proc (the launcher restarts it with them).
std::vector<std::string> own_args() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  if (!args.empty()) args.erase(args.begin());
  return args;
}

// The parallel mode against the launch: --gpus is DataParallel's; a rank a launcher started
// trains as DDP.
void check_launch(const TrainFlags& f) {
  const auto& o = f.o;
  if (f.given("--gpus") && o.parallel != train::Parallel::kDp)
    FASTER_USAGE_ERROR("--gpus needs --parallel dp (ddp: one GPU per rank)");
  if (o.parallel == train::Parallel::kDdp) return;
  // One rank of a launched job (torchrun, srun -n N) without DDP would train alone, N times over,
  // each writing the same --save and --checkpoint.
  const char* world = std::getenv("WORLD_SIZE");
  if ((world && std::atoi(world) > 1) || train::in_slurm_step())
    FASTER_USAGE_ERROR(
        "this process is one rank of a launched job (",
        world && *world ? "WORLD_SIZE=" + std::string(world) : std::string("an srun step"),
        ") but --parallel ddp is not given: each rank would train alone; add --parallel ddp");
}

// --nproc: this process starts the job's local ranks and waits for them.
int launch_ranks(TrainFlags& f) {
  auto& o = f.o;
  check_range("--nproc", f.nproc, 1, 1024);
  if (o.parallel != train::Parallel::kDdp) FASTER_USAGE_ERROR("--nproc needs --parallel ddp");
  if (in_launched_job())
    FASTER_THROW(
        "--nproc given inside an already launched job (RANK is set, or this is a task "
        "of an srun step)");
  train::validate(o);  // once here, not once per rank (resolve_flags checked the files)
  if (!o.json.empty()) tools::check_output_path(o.json, "--json");
  train::LaunchOptions lo;
  lo.nproc = f.nproc;
  lo.exe = self_exe();
  lo.args = train::without_nproc(own_args());
  lo.checkpoint = o.checkpoint;
  if (f.nproc_taken)
    std::printf("launching as the resumed run ran: --parallel ddp --nproc %d\n", f.nproc);
  std::fflush(stdout);
  return train::launch_local(lo);
}

void print_epoch(const train::EpochStats& e, int epochs) {
  std::printf("epoch %d/%d  train loss %.4f", e.epoch, epochs, e.train_loss);
  if (e.evaluated)
    std::printf("  test loss %.4f  test acc %.2f%%  top-5 %.2f%%", e.test_loss, e.test_accuracy,
                e.test_top5);
  if (e.evaluated && e.averaged)  // the scores above are the average's; torchvision shows both
    std::printf("  (average; own weights: loss %.4f  acc %.2f%%  top-5 %.2f%%)", e.own_test_loss,
                e.own_test_accuracy, e.own_test_top5);
  std::printf("  %.2fs (%.0f img/s)\n", e.seconds,
              e.train_seconds > 0 ? e.train_images / e.train_seconds : 0.0);
  std::fflush(stdout);
}

// The summary line; the exit code, 3 when the job skipped bad images.
int print_done(const train::TrainReport& report, const train::TrainOptions& o) {
  const int code = report.skipped_images() > 0 ? kExitBadInput : 0;
  std::printf("done: %zu epoch%s in %.2fs on %s (%.0f train images/s), ", report.epochs.size(),
              report.epochs.size() == 1 ? "" : "s", report.total_seconds, report.device.c_str(),
              report.train_images_per_second);
  if (const auto acc = report.final_test_accuracy())
    std::printf("final test accuracy %.2f%%", *acc);
  else
    std::printf("not tested (no val split)");
  // Time to accuracy counts from the process's start (set-up and LibTorch's loading included).
  if (train::is_speedrun(o.recipe))
    std::printf(", %.2fs from process start", report.process_seconds);
  if (code != 0)  // per epoch: a bad image is met again in each (the warnings say which)
    std::printf("; bad images skipped %lld times", static_cast<long long>(report.skipped_images()));
  std::printf("\n");
  return code;
}

// --test-only (torchvision's): `faster eval` of --resume's weights on the run's data, with the
// flags eval shares with train.
int run_test_only(TrainFlags& f) {
  take_torchvision_spellings(f);
  const auto& o = f.o;
  if (o.resume.empty() && o.weights.empty())
    FASTER_USAGE_ERROR(
        "--test-only scores --resume's weights (a checkpoint or weights file) or --weights' "
        "(torchvision's by name, or a file): name one");
  train::EvalOptions e;
  // As train.py: --resume's weights where given, scored at the transforms of --weights' name.
  e.weights = o.resume.empty() ? o.weights : o.resume;
  if (!o.resume.empty()) e.transforms = o.weights;
  e.data = o.data;
  if (f.given("--model")) e.model = o.model;
  e.device = o.device;
  if (f.given("--batch")) e.batch = o.batch;
  e.workers = o.workers;
  e.val_res = o.val_res, e.val_resize = o.val_resize;
  e.decode = o.decode;
  // In float32 whatever --amp says, as train.py's evaluate() runs (no autocast there).
  e.channels_last = o.channels_last;
  if (!data::is_small_dataset(e.data)) ask_for_more_work_queues();
  for (const auto& note : f.notes) std::printf("(%s)\n", note.c_str());
  return print_eval(train::evaluate(e), o.json);
}

int run_train(TrainFlags& f) {
  auto& o = f.o;
  if (f.test_only) return run_test_only(f);
  resolve_flags(f);
  check_launch(f);
  if (f.given("--nproc") || f.nproc_taken) return launch_ranks(f);
  if (!o.json.empty()) tools::check_output_path(o.json, "--json");  // before the run, not after
  train::TrainCallbacks cb;
  cb.on_start = [&f](const std::string& line) {  // rank 0 only
    print_recipe(f);
    std::printf("training %s\n", line.c_str());
    std::fflush(stdout);
  };
  cb.on_epoch = [&o](const train::EpochStats& e) { print_epoch(e, o.epochs); };
  const auto report = train::train(o, cb);
  // Rank 0 speaks for the job: its --json, its done line, and its exit code (the other ranks end
  // 0, so no launcher takes them for failed while rank 0 still writes its files).
  if (!report.is_main) return 0;
  const int code = print_done(report, o);
  if (!o.json.empty()) tools::write_file_atomic(o.json, report.to_json().dump(2) + "\n");
  return code;
}

void add_train(CLI::App& root, int& exit_code) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = root.add_subcommand(
      "train",
      "Train an image classifier: ThinNet on a small dataset (default: Fashion-MNIST from "
      "Debian's dataset-fashion-mnist), or a ResNet on JPEG folders / LMDB (--data ROOT with "
      "train/ and val/, --model resnet18|resnet34|resnet50|resnet101|resnet152|resnext50_32x4d|"
      "resnext101_32x8d|resnext101_64x4d|wide_resnet50_2|wide_resnet101_2).  Evaluates "
      "top-1/top-5 every --eval-every epochs; --checkpoint/--resume, --save (torchvision's "
      "names), --log-dir.");
  flags->cmd = cmd;
  add_train_flags(cmd, *flags);
  cmd->callback([flags, &exit_code] { exit_code = run_train(*flags); });
}

}  // namespace
FASTER_REGISTER_COMMAND(10, add_train);
}  // namespace faster::cli
