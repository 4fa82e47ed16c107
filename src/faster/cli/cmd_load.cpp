// `faster load`: the loading benchmark (the data pipeline into the GPU, or host memory without
// one).
#include <cstdio>
#include <memory>
#include <thread>

#include "faster/cli/command.h"
#include "faster/core/error.h"
#include "faster/data/loader/load_benchmark.h"
#include "faster/tools/file_io.h"
#include "faster/train/trainer.h"

namespace faster::cli {
namespace {

struct LoadFlags {
  data::LoadBenchOptions bench;
  train::Decode decode = train::Decode::kCpu;
  std::string device = "auto";
  std::string json;
  bool val = false;
  CLI::App* cmd = nullptr;
};

void apply(LoadFlags& f) {
  auto& o = f.bench.loader;
  o.transform = f.val ? data::Transform::kVal : data::Transform::kTrain;
  const auto given = [&](const char* flag) { return f.cmd->get_option(flag)->count() > 0; };
  if (given("--batches")) check_range("--batches", f.bench.batches, 1, int64_t{1} << 40);
  if (given("--warmup")) check_range("--warmup", f.bench.warmup, 0, int64_t{1} << 40);
  check_at_least("--floor-images", f.bench.floor_samples, 0);
  if (o.workers == 0)
    o.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.device = train::resolve_device(f.device);
  if (o.device.is_cpu() && f.decode == train::Decode::kNvjpeg)  // as train and eval say it
    train::refuse_on_cpu(f.device, "--decode nvjpeg", "--decode cpu decodes on the CPU");
  o.decode = f.decode == train::Decode::kNvjpeg ? data::DecodeOn::kNvjpeg : data::DecodeOn::kCpu;
  f.bench.auto_decode = f.decode == train::Decode::kAuto;
  data::validate(o);  // before the dataset is listed
  // Flags that only mean something with another: refused rather than ignored.
  if (given("--cpu-share") && f.decode == train::Decode::kCpu)
    FASTER_USAGE_ERROR(
        "--cpu-share splits the images between the CPU and nvJPEG: it needs "
        "--decode nvjpeg (or auto)");
  for (const char* flag : {"--val-resize", "--val-size"})
    if (given(flag) && !f.val)
      FASTER_USAGE_ERROR(flag, " is the validation transform's: it needs --val");
  if (given("--size") && f.val)
    FASTER_USAGE_ERROR("--size is the training crop's; --val crops to --val-size");
  if (given("--floor-images") && f.bench.floor_samples == 0 && f.bench.decode_only)
    FASTER_USAGE_ERROR("--decode-only measures the decode floor alone: --floor-images 0 skips it");
  // --decode-only times no pipeline: the pipeline's flags would go unused.
  if (f.bench.decode_only)
    for (const char* flag : {"--batches", "--epochs", "--warmup", "--batch", "--workers", "--cold",
                             "--size", "--val-resize", "--val-size", "--output", "--layout",
                             "--decode", "--cpu-share", "--nvjpeg-threads"})
      if (given(flag))
        FASTER_USAGE_ERROR(flag,
                           " is the pipeline's; --decode-only times one core's full-size "
                           "decoding alone (of --floor-images images; --val: of the val split)");
}

void add_load(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand(
      "load",
      "Benchmark the data pipeline: read, decode (libjpeg-turbo, region of interest, DCT "
      "scaling;\n"
      "or nvJPEG on the GPU's JPEG engines), augment and batch a dataset into the GPU (host "
      "memory\n"
      "without one), after a warm-up.\n"
      "Reports images/s, MB/s of compressed input, per-stage throughput and the bottleneck,\n"
      "and the decode floor (one core's full-size decode rate x cores).");
  auto f = std::make_shared<LoadFlags>();
  f->cmd = cmd;
  auto& o = f->bench.loader;
  o.workers = 0;  // all cores
  cmd->add_option("DIR", f->bench.path,
                  "Dataset: an ImageNet-style folder (DIR/<class>/<image>.JPEG), a root holding "
                  "train/ and val/ (the split is picked by --val), or an LMDB written by "
                  "'faster pack'")
      ->required();
  add_workers_option(cmd, o.workers, "Decoding threads (default 0: all cores)");
  cmd->add_option("--batch", o.batch, "Images per batch")->capture_default_str();
  auto* epochs = add_epochs_option(cmd, f->bench.epochs, "Epochs to time (default 1)");
  cmd->add_option("--batches", f->bench.batches, "Batches to time instead of whole epochs")
      ->excludes(epochs);
  cmd->add_option("--warmup", f->bench.warmup,
                  "Batches run before timing (default: min(5, a fifth of an epoch))");
  cmd->add_flag("--cold", f->bench.cold,
                "Evict the dataset from the page cache before timing (posix_fadvise DONTNEED per "
                "file, and drop_caches where permitted) so the disk is measured; default: warm, "
                "every file read once first");
  add_enum_option(cmd, "--decode", f->decode, train::kDecodeChoices,
                  "Decoder: cpu (libjpeg-turbo in the worker threads), nvjpeg (batched on the "
                  "GPU: its hardware JPEG decoder where it has one; crop, resize and flip there "
                  "too; progressive, CMYK and truncated files and PNGs still go to the CPU) or "
                  "auto (as train decides: nvjpeg on a GPU unless the images are small or PNG)");
  add_nvjpeg_options(cmd, o.cpu_share, o.gpu_stages);
  cmd->add_option("--size", o.size, "Train crop output side (random-resized-crop + flip)")
      ->capture_default_str();
  cmd->add_flag("--val", f->val, "Validation transform: resize shorter side, then center crop");
  cmd->add_option("--val-resize", o.val_resize, "Validation: shorter side resized to this")
      ->capture_default_str();
  cmd->add_option("--val-size", o.val_size, "Validation: center crop side")->capture_default_str();
  add_enum_option(cmd, "--output", o.output, data::kOutputNames,
                  "uint8 (normalized on the GPU after the copy) or float (normalized by workers "
                  "with ImageNet mean/std)");
  add_enum_option(cmd, "--layout", o.layout, data::kLayoutNames, "nchw or nhwc");
  add_enum_option(cmd, "--on-bad-image", o.on_bad_image, data::kBadImageNames,
                  "skip: replace a corrupt/unreadable image by the next one and count it; fail: "
                  "stop with its name");
  add_device_option(cmd, f->device);
  add_seed_option(cmd, o.sampler.seed, "Shuffle and crop seed");
  cmd->add_flag("--decode-only", f->bench.decode_only,
                "Only measure the decode floor (one core, full-size decode from memory)");
  cmd->add_option("--floor-images", f->bench.floor_samples,
                  "Images decoded for the decode floor (0: skip it)")
      ->capture_default_str();
  cmd->add_option("--json", f->json, "Also write the report as JSON to this file");
  cmd->callback([f, &exit_code] {
    apply(*f);
    if (!f->json.empty()) tools::prepare_output_file(f->json, "--json");  // before the run
    const data::LoadReport report = data::run_load_benchmark(f->bench);
    data::print_load_report(report, f->bench.decode_only);
    if (!f->json.empty()) tools::write_file_atomic(f->json, data::to_json(report).dump(2) + "\n");
    exit_code = report.skipped > 0 ? kExitBadInput : 0;
  });
}

}  // namespace
FASTER_REGISTER_COMMAND(40, add_load);
}  // namespace faster::cli
