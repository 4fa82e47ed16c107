// Load benchmark: warm-up, optional cache eviction, timed batches (with a device sync per batch so
// that copies are counted), then the report.
#include "faster/data/loader/load_benchmark.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/sources/open_source.h"
#include "faster/data/sources/page_cache.h"

namespace faster::data {
namespace {

void sync_device(const torch::Device& device, const Batch& batch) {
  // Reading one element waits for the batch's copy and normalize on the consumer's stream.
  if (device.is_cuda()) (void)batch.labels[0].item<int64_t>();
}

std::string describe_transform(const LoaderOptions& o, bool normalized_on_device) {
  char buf[200];
  if (o.transform == Transform::kTrain)
    std::snprintf(buf, sizeof buf, "random-resized-crop %d + flip", o.size);
  else if (o.transform == Transform::kNone)
    std::snprintf(buf, sizeof buf, "as stored");
  else
    std::snprintf(buf, sizeof buf, "resize %d + center-crop %d", o.val_resize, o.val_size);
  std::string s = buf;
  s += std::string(", ") + enum_name(kOutputNames, o.output) + " " +
       enum_name(kLayoutNames, o.layout);
  if (o.decode == DecodeOn::kNvjpeg)
    s += normalized_on_device ? " (decoded, resized and normalized on the GPU)"
                              : " (decoded and resized on the GPU)";
  else if (o.output == OutputType::kFloat)
    s += " (normalized by workers)";
  else if (normalized_on_device)
    s += " (normalized on the GPU)";
  return s;
}

// Runs `count` batches, crossing epoch boundaries as needed; returns the batches actually run and
// adds the images they held (padding rows aside) to `images` where given.
int64_t run_batches(ImageLoader& loader, int64_t count, int64_t& epoch, Progress* progress,
                    int64_t* images) {
  int64_t done = 0;
  while (done < count) {
    auto batch = loader.next();
    if (!batch) {
      loader.start_epoch(++epoch);
      continue;
    }
    sync_device(loader.options().device, *batch);
    ++done;
    if (images) *images += batch->size;
    if (progress) progress->add();
  }
  return done;
}

}  // namespace

std::vector<LoadReport::StageRow> LoadReport::stage_rows() const {
  const auto row = [](const char* name, double seconds, int64_t images, int parallel) {
    return StageRow{name, seconds / std::max<int64_t>(1, images) * 1e3,
                    seconds > 0 ? images / (seconds / std::max(1, parallel)) : 0};
  };
  const LoaderStats& s = stats;
  // The workers' stages run at most as many at a time as there are cores (1,000 threads on 16
  // cores once claimed a read stage of 22 million images/s).
  const int threads = cores > 0 ? std::min(workers, cores) : workers;
  std::vector<StageRow> rows = {
      row("read", s.read_s, s.images, threads), row("decode", s.decode_s, s.images, threads),
      row("augment", s.augment_s, s.images, threads), row("copy", s.copy_s, s.images, 1)};
  if (s.gpu_images > 0) {
    rows.push_back(row("gpu", s.gpu_s, s.gpu_images, gpu_stages));
    rows.back().note = "   (nvJPEG decode + crop/resize, per batch incl. waits)";
  }
  return rows;
}

LoadReport loader_report(const ImageLoader& loader) {
  LoadReport r;
  const LoaderOptions& o = loader.options();
  r.device = loader.describe_device();
  r.workers = o.workers, r.batch = o.batch;
  r.gpu_stages = o.decode == DecodeOn::kNvjpeg ? o.gpu_stages : 0;
  r.transform = describe_transform(o, loader.normalizes_on_device());
  r.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.stats = loader.stats();
  r.cpu_share = {loader.cpu_share(), o.cpu_share.adapt};
  r.images = r.stats.images, r.bytes = r.stats.bytes, r.skipped = r.stats.skipped;
  const auto stages = r.stage_rows();
  const LoadReport::StageRow* slowest = &stages[0];
  for (const auto& s : stages)
    if (s.rate > 0 && (slowest->rate <= 0 || s.rate < slowest->rate)) slowest = &s;
  r.bottleneck = slowest->name;
  return r;
}

LoadReport run_load_benchmark(const LoadBenchOptions& o) {
  LoadReport r;
  auto source = open_source(o.path, o.loader.transform == Transform::kVal, &r.split_note);
  r.source = source->describe();
  r.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.floor_samples > 0) r.floor = measure_decode_floor(*source, o.floor_samples);
  if (o.decode_only) return r;

  LoaderOptions lo = o.loader;
  if (o.auto_decode) lo.decode = auto_decode(*source, lo.device);
  ImageLoader loader(source, lo);
  const int64_t per_epoch = loader.batches_per_epoch();
  const int64_t measured = o.batches > 0 ? o.batches : per_epoch * o.epochs;
  const int64_t warmup = o.warmup >= 0 ? o.warmup : std::min<int64_t>(5, per_epoch / 5);

  int64_t epoch = 0;
  if (warmup > 0) {  // threads started, ring and decoder buffers touched, allocator warmed
    loader.start_epoch(epoch);
    run_batches(loader, warmup, epoch, nullptr, nullptr);
  }
  if (o.cold) {
    r.cache = "cold: " + evict_from_page_cache(*source);
  } else {
    const int64_t bytes = prefetch_into_page_cache(*source, o.loader.workers);
    r.cache = "warm (every file read once before timing: " + std::to_string(bytes >> 20) + " MiB)";
  }
  // The clock starts before the epoch does, and the counters are reset inside start_epoch once the
  // warm-up's in-flight samples have drained: workers begin at once, and on a busy machine they
  // could finish batches before this thread runs again.
  epoch = 0;
  Progress progress("load", measured, "batch");
  Timer timer;
  loader.start_epoch(epoch, /*reset_stats=*/true);
  int64_t delivered = 0;
  r.batches = run_batches(loader, measured, epoch, o.progress ? &progress : nullptr, &delivered);
  const double seconds = timer.seconds();
  if (o.progress) progress.finish();
  LoadReport timed = loader_report(loader);
  timed.source = r.source, timed.split_note = r.split_note, timed.floor = r.floor;
  timed.cache = r.cache;
  timed.seconds = seconds;
  timed.batches = r.batches;
  // The rate is of the images the batches delivered: a run of --batches that ends inside an epoch
  // leaves the threads' read-ahead decoded but not delivered (the stage rows count all of it).
  timed.images = delivered;
  if (timed.stats.images > delivered && timed.stats.images > 0)
    timed.bytes = static_cast<int64_t>(static_cast<double>(timed.stats.bytes) * delivered /
                                       timed.stats.images);
  return timed;
}

void print_load_report(const LoadReport& r, bool decode_only) {
  std::printf("dataset:    %s%s%s\n", r.source.c_str(), r.split_note.empty() ? "" : ", ",
              r.split_note.c_str());
  if (r.floor.images > 0)
    std::printf(
        "decode floor: %.1f MP/s per core at full size (%.0f img/s, %.3f MP/img) x %d "
        "cores = %.0f img/s\n",
        r.floor.mp_per_s(), r.floor.images_per_s(), r.floor.megapixels / r.floor.images, r.cores,
        r.floor.images_per_s() * r.cores);
  if (decode_only) return;
  std::printf("transform:  %s\n", r.transform.c_str());
  std::printf("pipeline:   %d workers, batch %d -> %s\n", r.workers, r.batch, r.device.c_str());
  std::printf("cache:      %s\n", r.cache.c_str());
  std::printf("result:     %.1f img/s, %.1f MB/s compressed, %lld images in %lld batches, %.2f s\n",
              r.images_per_s(), r.mb_per_s(), static_cast<long long>(r.images),
              static_cast<long long>(r.batches), r.seconds);
  const auto& s = r.stats;
  if (r.gpu_stages > 0)
    std::printf(
        "GPU decode: %lld of %lld images on the GPU (%d stage threads), the rest on the "
        "CPU (--cpu-share %s%.3g)\n",
        static_cast<long long>(s.gpu_images), static_cast<long long>(s.images), r.gpu_stages,
        r.cpu_share.adapt ? "auto, ended at " : "", r.cpu_share.value);
  std::printf("%-8s %12s %22s\n", "stage", "ms/img", "img/s (all workers)");
  for (const auto& row : r.stage_rows())
    std::printf("%-8s %12.3f %22.0f%s\n", row.name, row.ms_per_image, row.rate, row.note);
  if (s.gpu_s > 0)
    std::printf(
        "GPU stage: %.0f %% checking headers, %.0f %% in nvJPEG's calls, %.0f %% waiting for "
        "the GPU\n",
        100 * s.gpu_parse_s / s.gpu_s, 100 * s.gpu_call_s / s.gpu_s, 100 * s.gpu_wait_s / s.gpu_s);
  std::printf("waiting for workers: %.2f s of %.2f s; bottleneck: %s\n", s.wait_s, r.seconds,
              r.bottleneck.c_str());
  if (s.png_images > 0)
    std::printf("PNG images: %lld (decoded on the CPU)\n", static_cast<long long>(s.png_images));
  std::printf("bad images skipped: %lld\n", static_cast<long long>(r.skipped));
  for (const auto& name : s.skipped_names) std::printf("  skipped %s\n", name.c_str());
}

nlohmann::json to_json(const LoadReport& r) {
  const auto& s = r.stats;
  return {{"source", r.source},
          {"device", r.device},
          {"cache", r.cache},
          {"transform", r.transform},
          {"workers", r.workers},
          {"batch", r.batch},
          {"batches", r.batches},
          {"images", r.images},
          {"bytes", r.bytes},
          {"seconds", r.seconds},
          {"images_per_s", r.images_per_s()},
          {"mb_per_s", r.mb_per_s()},
          {"skipped", r.skipped},
          {"skipped_names", s.skipped_names},
          {"stages_s",
           {{"read", s.read_s},
            {"decode", s.decode_s},
            {"augment", s.augment_s},
            {"copy", s.copy_s},
            {"wait", s.wait_s},
            {"gpu", s.gpu_s},
            {"gpu_parse", s.gpu_parse_s},
            {"gpu_call", s.gpu_call_s},
            {"gpu_wait", s.gpu_wait_s}}},
          {"gpu_images", s.gpu_images},
          {"png_images", s.png_images},
          {"gpu_stages", r.gpu_stages},
          {"cpu_share", r.cpu_share.value},
          {"cpu_share_auto", r.cpu_share.adapt},
          {"bottleneck", r.bottleneck},
          {"cores", r.cores},
          {"decode_floor",
           {{"images", r.floor.images},
            {"mp_per_s_per_core", r.floor.mp_per_s()},
            {"images_per_s_per_core", r.floor.images_per_s()},
            {"images_per_s_all_cores", r.floor.images_per_s() * r.cores}}}};
}

}  // namespace faster::data
