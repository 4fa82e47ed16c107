// The image pipeline: N worker threads, each with its own JPEG decoder and resampler scratch,
// read -> decode (region of interest, DCT-scaled) -> crop/resize/flip -> store straight into a
// fixed ring of (pinned) host batch buffers; batches come out in order and are copied to the device
// on a side stream.  Everything is allocated when the loader is built; steady state allocates
// nothing.  Sources of decoded pixels (arrays in memory) skip the decode and take the same path.
// With nvJPEG decoding, workers only read each file and parse its header; GPU stage threads (each
// with its own NvjpegDecoder) decode each batch on the GPU's JPEG engines in parts, one per
// thread, taken in order by whichever thread is free as soon as a part's samples are in, and
// crop/resize/flip them there.  Images the GPU does not take (progressive, CMYK, truncated, a share
// given to the CPU) are decoded by the workers as above and uploaded into the same batch; images
// nvJPEG refuses are decoded by the stage's own CPU worker from the bytes already read.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "faster/data/decode/nvjpeg_decoder.h"
#include "faster/data/decode/png_codec.h"
#include "faster/data/loader/device_copy.h"
#include "faster/data/loader/loader.h"
#include "faster/data/sources/source.h"

namespace faster::data {

// The options' ranges and combinations (usage errors name the flag); the constructor checks them
// too, and `faster load` before it lists the dataset.
void validate(const LoaderOptions& o);

// The median pixel count (width x height) of up to `samples` JPEGs spread evenly over `source`,
// from their headers; 0 when the source holds raw pixels or none of them opens, -1 when most of
// them are PNG files.  What `--decode auto` looks at: nvJPEG's fixed cost per image outweighs its
// speed on small images, and it decodes no PNG.
int64_t median_jpeg_pixels(const Source& source, int samples = 15);

// --decode auto: nvJPEG on a CUDA device, but the CPU for a tree of PNGs or of small images (a
// median of at most 160 x 160 pixels), where nvJPEG's fixed cost per image outweighs it; says so
// where it picks the CPU on a GPU.
DecodeOn auto_decode(const Source& source, const torch::Device& device);

// Cumulative per-stage time, summed over worker threads (read, decode, augment) or spent by the
// consumer (copy: host->device and device normalize; wait: blocked waiting for workers).
struct LoaderStats {
  double read_s = 0, decode_s = 0, augment_s = 0, copy_s = 0, wait_s = 0;
  double worker_s() const { return read_s + decode_s + augment_s; }  // the worker threads' share
  // nvJPEG: time the GPU stage threads spent on their batches (summed), and the images they did;
  // of that time, checking headers, in nvJPEG's calls and kernel launches, and waiting for the GPU
  // (the rest: the CPU decoding the images nvJPEG refused).
  double gpu_s = 0, gpu_parse_s = 0, gpu_call_s = 0, gpu_wait_s = 0;
  int64_t gpu_images = 0;
  // skipped: bad images met at their own place in the epoch's order (each once per epoch), not
  // counting bad images tried again as replacements.
  int64_t images = 0, bytes = 0, skipped = 0, decoded_pixels = 0;
  int64_t png_images = 0;  // of `images`: PNG files (decoded on the CPU, with nvJPEG too)
  std::vector<std::string> skipped_names;  // first few, with the reason
};

class ImageLoader : public Loader {
 public:
  ImageLoader(std::shared_ptr<const Source> source, LoaderOptions options);
  ~ImageLoader() override;
  ImageLoader(const ImageLoader&) = delete;
  ImageLoader& operator=(const ImageLoader&) = delete;

  void start_epoch(int64_t epoch) override { start_epoch(epoch, false); }
  // reset_stats: zero the counters once the previous epoch's work has drained, before any
  // sample of this one is loaded (benchmarks time from here).
  void start_epoch(int64_t epoch, bool reset_stats);
  // With the `fail` policy, a bad image throws faster::Error naming it; with `skip`, the end of an
  // epoch logs a warning with the number of images skipped in it.
  std::optional<Batch> next() override;

  int64_t batches_per_epoch() const override;
  int64_t samples_per_epoch() const override;
  // Totals since construction; reset_stats() starts over (for example after a warm-up).
  LoaderStats stats() const;
  // Bad images skipped since the current epoch started (what its end-of-epoch warning counts).
  int64_t skipped_this_epoch() const;
  // The share of GPU-decodable images the workers decode now (--cpu-share; moves with auto).
  double cpu_share() const { return share_.load(std::memory_order_relaxed); }
  void reset_stats();
  const LoaderOptions& options() const { return options_; }
  // Whether batches leave the ring as uint8 and are normalized on the device (float output).
  bool normalizes_on_device() const { return normalize_.defined(); }
  std::string describe_device() const;
  // Bytes of host batch memory, allocated once.
  int64_t ring_bytes() const;
  // Train transform: the output side from the next start_epoch() on, up to options().max_size
  // (progressive resizing); the ring was sized for the largest.
  void set_size(int size);
  // Called every 50 ms or so while next() waits for its batch, on next()'s thread, without the
  // loader's lock: an exception it throws leaves next(), the batch still next in line (Ctrl-C in
  // the Python module).
  void set_wait_check(std::function<void()> check) { wait_check_ = std::move(check); }
  // The shape of one output image: channels, height, width.
  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }

 private:
  struct Slot {
    torch::Tensor storage;         // host, pinned when a GPU is used, sized for the largest batch
    torch::Tensor images, labels;  // images: a view of storage at the current size
    int64_t batch = -1;
    int expected = 0, filled = 0;
    std::vector<int64_t> indices;  // per position, the draw loaded (Sampler::indices)
    // nvJPEG: per position, the compressed bytes (swapped in from the worker, capacity kept) and,
    // where the GPU is to decode it, what to do; the finished batch on the device.
    std::vector<std::vector<uint8_t>> jpeg;
    std::vector<GpuJpeg> gpu;
    std::vector<uint8_t> on_gpu;
    torch::Tensor device_images;
    // nvJPEG: the batch's positions fall into parts (part_begin()), each staged on its own as soon
    // as its samples are in (part_filled reaches part_size()); the parts done.
    std::vector<int> part_filled;
    int parts_staged = 0;
  };
  struct Worker;
  struct Stage;

  void worker_loop(int id);
  // Loads the sample at `position` of `slot`, starting from the draw `first` (a source index, or
  // one of its repetitions: Sampler::indices) and moving on to the next index while images are bad
  // (skip policy).  have_bytes: `first`'s bytes and label are
  // in w.sample already (an image nvJPEG refused), so it is not read again.  A bad `first` counts
  // as skipped only where it is the position's own sample, not a stand-in for another.
  void process(Worker& w, Slot& slot, int position, int64_t first, bool allow_gpu,
               bool have_bytes = false);
  bool load_sample(Worker& w, int64_t draw, int64_t epoch, Slot& slot, int position, bool count_bad,
                   bool allow_gpu, bool have_bytes);
  bool cpu_takes(Worker& w, const RegionF& want);
  void stage_loop(int id);
  void run_stage(Stage& st, Slot& slot, int part, torch::Tensor& out);
  // nvJPEG: the parts a batch's GPU stage is split into, one per stage thread (0 without nvJPEG),
  // the first position of part k, and its samples in `s` (fewer, maybe none, in a last batch).
  int parts() const { return gpu() ? options_.gpu_stages : 0; }
  int part_begin(int k) const { return (k * options_.batch + parts() - 1) / parts(); }
  int part_size(const Slot& s, int k) const {
    return std::min(part_begin(k + 1), s.expected) - std::min(part_begin(k), s.expected);
  }
  int part_of(int position) const { return position * parts() / options_.batch; }
  bool staged(const Slot& s) const { return s.parts_staged == parts(); }
  bool gpu() const { return options_.decode == DecodeOn::kNvjpeg; }
  // Training images augmented by a policy (auto_augment.h): on the CPU, whatever the decoder.
  bool augments() const {
    return options_.auto_augment.on() && options_.transform == Transform::kTrain;
  }
  // The host ring holds uint8 images: uint8 output, or nvJPEG (the ring only carries CPU-decoded
  // images into the device batch).
  bool host_uint8() const { return options_.output == OutputType::kUint8 || gpu(); }
  // Rows of the batch in `slot` as delivered: its samples, or a full batch when padded.
  int padded_rows(const Slot& slot) const;
  void stop_workers();
  void adapt_share_locked(int64_t b, bool threads_waited);
  void reset_stats_locked();
  void wait_idle(std::unique_lock<std::mutex>& lock);

  std::shared_ptr<const Source> source_;
  LoaderOptions options_;
  std::optional<PixelShape> pixel_shape_;  // the source's, when it holds decoded pixels
  int channels_ = 3, height_ = 0, width_ = 0;
  int claim_ = 1;      // samples a worker takes at once (more when a sample is only a copy)
  int next_size_ = 0;  // set_size()'s side, applied by start_epoch()
  void apply_size(int height, int width);
  Sampler sampler_;
  DeviceCopy copy_;
  std::vector<Slot> ring_;
  PixelNormalizer normalize_;  // on the device, for normalize_on_device

  mutable std::mutex mutex_;
  std::condition_variable work_cv_, ready_cv_, idle_cv_;
  std::vector<int64_t> order_;  // this epoch's draws (Sampler::indices)
  int64_t next_part_ = 0;       // nvJPEG: the next part to stage, batch * parts() + part, in order
  int64_t epoch_ = -1, next_task_ = 0, total_tasks_ = 0;
  // Batches handed out, and those whose slots are free again: written under the lock by the
  // consumer's thread only (next, start_epoch), so that thread may read them without it.
  int64_t released_ = 0, consumed_ = 0;
  int in_flight_ = 0;
  bool stop_ = false, epoch_reported_ = false;
  bool ring_waited_ = false;  // a worker found every sample the ring allows claimed
  int64_t skipped_at_epoch_start_ = 0;
  std::string error_;  // first fatal error (fail policy), rethrown by next()
  std::function<void()> wait_check_;

  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::vector<std::thread> stage_threads_;
  std::condition_variable stage_cv_;
  std::atomic<int64_t> read_ns_{0}, decode_ns_{0}, augment_ns_{0}, bytes_{0}, images_{0},
      skipped_{0}, pixels_{0}, png_images_{0}, gpu_ns_{0}, gpu_images_{0}, gpu_parse_ns_{0},
      gpu_call_ns_{0}, gpu_wait_ns_{0};
  double copy_s_ = 0, wait_s_ = 0;
  std::vector<std::string> skipped_names_;
  // The share of GPU-decodable images the workers decode (options_.cpu_share; moves with auto).
  std::atomic<double> share_{0.0};
  CheapestShare cheapest_;  // which images make up the share
};

}  // namespace faster::data
