// ImageLoader implementation.  Work is handed out one sample at a time in epoch order; a sample's
// batch decides its ring slot, and a worker only claims a sample whose slot the consumer has
// released, so the ring bounds memory and batches complete roughly in order.  The workers, the
// GPU stages and the consumer share that one ring and its lock: kept in one file, past 600 lines,
// so the protocol reads top to bottom (its options' checks: loader_options.cpp).
#include "faster/data/loader/image_loader.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/core/timer.h"

namespace faster::data {
namespace {

// A bad image is replaced by the next index (deterministic, whatever the thread timing); this many
// bad images in a row means something else is wrong, and the loader stops.
constexpr int kMaxReplacements = 64;
constexpr size_t kMaxSkippedNames = 20;

// The automatic augmentation's draws, apart from the crop's (same seed, epoch and index).
constexpr uint64_t kAutoAugmentStream = 0x9E3779B97F4A7C15ull;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Host batch buffers: enough for the workers to fill ahead while the consumer (and, with nvJPEG,
// each GPU stage) holds one.
int ring_slots(const LoaderOptions& o) {
  if (o.ring > 0) return o.ring;
  return o.decode == DecodeOn::kNvjpeg ? 4 + o.gpu_stages : 4;
}

// The ring is allocated whole, up front: one that cannot fit in this machine's memory is refused
// with the flags that size it, before the allocator fails with its own message.
void check_ring_fits(double bytes, int slots, const LoaderOptions& o, int side) {
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (memory <= 0 || bytes <= memory / 2) return;
  char sizes[96];
  std::snprintf(sizes, sizeof sizes, "%.1f GB, more than half of this machine's %.1f GB",
                bytes / 1e9, memory / 1e9);
  throw Error(detail::concat("the loader's ", slots, " batch buffers (--batch ", o.batch, " of ",
                             side, "x", side, " images) need ", sizes),
              "lower --batch or the image size");
}

}  // namespace

struct ImageLoader::Worker {
  explicit Worker(const JpegDecoderOptions& o) : decoder(o), png(o.max_pixels) {}
  JpegDecoder decoder;
  PngDecoder png;
  Resampler resampler;
  ImageBuffer decoded, resized;
  AugmentBuffers augment;  // the policies' scratch
  Sample sample;
};

// A GPU stage thread's tools: its nvJPEG decoder, and a CPU worker for the images nvJPEG refuses.
struct ImageLoader::Stage {
  Stage(torch::Device device, int batch, const JpegDecoderOptions& o)
      : decoder(device, batch), cpu(o) {}
  NvjpegDecoder decoder;
  Worker cpu;
  std::vector<GpuJpeg> jobs;
  std::vector<int> refused, uploads;
};

ImageLoader::ImageLoader(std::shared_ptr<const Source> source, LoaderOptions options)
    : source_(std::move(source)),
      options_((validate(options), options)),
      pixel_shape_(source_->pixels()),
      sampler_(source_->size(), options.sampler),
      copy_(options.device, ring_slots(options)) {
  share_.store(options_.cpu_share.value);
  if (pixel_shape_ && gpu())
    throw Error(
        "--decode nvjpeg decodes JPEG files, but " + source_->describe() + " holds decoded pixels",
        "use --decode cpu");
  if (!pixel_shape_ && options_.transform == Transform::kNone)
    FASTER_THROW(source_->describe(),
                 ": images of any size need a crop (a train or val transform)");
  // JPEG decodes to RGB, or to gray for a model that takes one channel (on the CPU: nvJPEG's
  // stage writes RGB).
  options_.decoder.gray = !pixel_shape_ && options_.channels == 1;
  if (options_.decoder.gray && gpu())
    throw Error("a 1-channel model's JPEG data decodes on the CPU: nvJPEG's stage writes RGB",
                "use --decode cpu");
  const int data_channels = pixel_shape_ ? pixel_shape_->channels : options_.decoder.gray ? 1 : 3;
  channels_ = options_.channels > 0 ? options_.channels : data_channels;
  if (channels_ != data_channels && !(data_channels == 1 && channels_ == 3))
    FASTER_THROW(source_->describe(), " has ", data_channels, "-channel images; cannot make ",
                 channels_);
  const bool as_stored = options_.transform == Transform::kNone;
  const bool train = options_.transform == Transform::kTrain;
  const int side = train ? options_.size : options_.val_size;
  const int largest = train ? std::max(options_.size, options_.max_size) : side;
  height_ = as_stored ? pixel_shape_->height : largest;
  width_ = as_stored ? pixel_shape_->width : largest;
  // A decoded sample is a copy (and maybe a small resample): hand them out a few at a time, so
  // the workers do not spend their time on the work queue's lock.
  claim_ = pixel_shape_ ? std::min(options_.batch, 32) : 1;
  const int slots = ring_slots(options_);
  const auto dtype = host_uint8() ? torch::kUInt8 : torch::kFloat32;
  const auto host = torch::TensorOptions().pinned_memory(copy_.wants_pinned());
  const int64_t elements = int64_t{options_.batch} * channels_ * height_ * width_;
  check_ring_fits(static_cast<double>(elements) * torch::elementSize(dtype) * slots, slots,
                  options_, std::max(height_, width_));
  ring_.resize(slots);
  for (Slot& slot : ring_) {
    slot.storage = torch::empty({elements}, host.dtype(dtype));
    slot.labels = torch::empty({options_.batch}, host.dtype(torch::kInt64));
    slot.indices.assign(options_.batch, -1);
    if (gpu()) {
      slot.jpeg.resize(options_.batch);
      slot.gpu.resize(options_.batch);
      slot.on_gpu.assign(options_.batch, 0);
      slot.part_filled.assign(parts(), 0);
    }
  }
  // Float output from uint8 batches: normalized on the device (always so with nvJPEG).
  const bool normalize =
      options_.output == OutputType::kFloat ? gpu() : options_.normalize_on_device;
  if (options_.device.is_cuda() && normalize)
    normalize_ =
        PixelNormalizer(options_.norm, channels_, options_.layout, options_.device, options_.dtype);
  if (as_stored)
    apply_size(height_, width_);
  else
    apply_size(side, side);
  if (gpu())
    for (int i = 0; i < options_.gpu_stages; ++i)
      stages_.push_back(std::make_unique<Stage>(options_.device, options_.batch, options_.decoder));
  for (int i = 0; i < options_.workers; ++i)
    workers_.push_back(std::make_unique<Worker>(options_.decoder));
  try {
    for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this, i] { worker_loop(i); });
    for (int i = 0; i < static_cast<int>(stages_.size()); ++i)
      stage_threads_.emplace_back([this, i] { stage_loop(i); });
  } catch (...) {    // a thread the system would not start (a process or pids limit)
    stop_workers();  // the started ones, which would otherwise end the process unjoined
    throw;
  }
}

std::string ImageLoader::describe_device() const {
  std::string s = copy_.describe();
  if (!stages_.empty())
    s += "; decode: " + stages_[0]->decoder.describe() + ", " + std::to_string(stages_.size()) +
         " GPU stage threads";
  return s;
}

ImageLoader::~ImageLoader() {
  stop_workers();
}

void ImageLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  ready_cv_.notify_all();
  stage_cv_.notify_all();
  for (auto& t : threads_) t.join();
  for (auto& t : stage_threads_) t.join();
  threads_.clear();
  stage_threads_.clear();
}

int64_t ImageLoader::batches_per_epoch() const {
  return batch_count(sampler_.per_rank(), options_.batch, options_.last_batch);
}

int64_t ImageLoader::samples_per_epoch() const {
  return delivered_samples(sampler_.per_rank(), options_.batch, options_.last_batch);
}

int64_t ImageLoader::ring_bytes() const {
  int64_t total = 0;
  for (const Slot& s : ring_) total += s.storage.nbytes() + s.labels.nbytes();
  return total;
}

void ImageLoader::set_size(int size) {
  if (options_.transform != Transform::kTrain)
    FASTER_THROW("set_size: only the train transform changes its size");
  const int largest = std::max(options_.size, options_.max_size);
  if (size < 8 || size > largest)
    FASTER_THROW("training resolution ", size, " is outside 8..", largest,
                 " (the loader's largest)");
  std::lock_guard<std::mutex> lock(mutex_);
  next_size_ = size;
}

// Views every slot's storage as a batch of height x width images (the workers are idle).
void ImageLoader::apply_size(int height, int width) {
  height_ = height, width_ = width;
  const auto shape = batch_shape(options_.layout, options_.batch, channels_, height, width);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  for (Slot& slot : ring_) slot.images = slot.storage.narrow(0, 0, numel).view(shape);
}

void ImageLoader::wait_idle(std::unique_lock<std::mutex>& lock) {
  idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
}

void ImageLoader::start_epoch(int64_t epoch, bool reset_stats) {
  std::unique_lock<std::mutex> lock(mutex_);
  total_tasks_ = next_task_;  // abandon what nobody has claimed yet
  wait_idle(lock);
  for (int i = 0; i < static_cast<int>(ring_.size()); ++i) copy_.wait_slot(i);
  if (next_size_ > 0) apply_size(next_size_, next_size_), next_size_ = 0;
  order_ = sampler_.indices(epoch);
  const int64_t nb = batches_per_epoch();
  total_tasks_ = options_.last_batch == LastBatch::kDrop ? nb * options_.batch
                                                         : static_cast<int64_t>(order_.size());
  epoch_ = epoch;
  epoch_reported_ = false;
  next_task_ = released_ = consumed_ = 0;
  for (Slot& s : ring_) s.batch = -1;
  next_part_ = 0;
  error_.clear();
  if (reset_stats) reset_stats_locked();
  skipped_at_epoch_start_ = skipped_;  // after a reset, which zeroes the count
  lock.unlock();
  work_cv_.notify_all();
  stage_cv_.notify_all();
}

void ImageLoader::worker_loop(int id) {
  // Under trial (issue 35, scripts/device/python_gap.py): FASTER_LOADER_NICE=N lowers the CPU
  // workers' scheduling priority by N, so that a training loop's launching thread is not
  // time-sliced among them when they fill every core.  Not yet measured; off unless set.
  if (const char* nice = std::getenv("FASTER_LOADER_NICE"))
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), std::atoi(nice));
  Worker& w = *workers_[id];
  const int64_t slots = static_cast<int64_t>(ring_.size());
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_cv_.wait(lock, [&] {
      if (stop_) return true;
      if (next_task_ >= total_tasks_ || !error_.empty()) return false;
      if (next_task_ / options_.batch < released_ + slots) return true;
      ring_waited_ = true;  // out of work: the ring is full
      return false;
    });
    if (stop_) return;
    const int64_t task = next_task_;
    const int64_t b = task / options_.batch;
    const int64_t batch_end = std::min((b + 1) * options_.batch, total_tasks_);
    const int count = static_cast<int>(std::min<int64_t>(claim_, batch_end - task));
    next_task_ += count;
    Slot& slot = ring_[b % slots];
    if (slot.batch != b) {  // the first sample claimed of this batch prepares the slot
      slot.batch = b;
      slot.filled = 0;
      slot.expected =
          static_cast<int>(std::min<int64_t>(options_.batch, total_tasks_ - b * options_.batch));
      slot.parts_staged = 0;
      std::fill(slot.part_filled.begin(), slot.part_filled.end(), 0);
    }
    ++in_flight_;
    lock.unlock();
    for (int k = 0; k < count; ++k)
      process(w, slot, static_cast<int>((task + k) % options_.batch), order_[task + k], gpu());
    lock.lock();
    --in_flight_;
    bool part_done = false;
    for (int k = 0; k < count && gpu(); ++k) {
      const int part = part_of(static_cast<int>((task + k) % options_.batch));
      part_done |= ++slot.part_filled[part] == part_size(slot, part);
    }
    if (part_done) stage_cv_.notify_all();
    if ((slot.filled += count) == slot.expected) ready_cv_.notify_all();
    if (in_flight_ == 0) idle_cv_.notify_all();
  }
}

void ImageLoader::process(Worker& w, Slot& slot, int position, int64_t first, bool allow_gpu,
                          bool have_bytes) {
  const int64_t n = source_->size();
  // Only a sample's own failure is counted: a bad stand-in (a replacement, or the one the GPU
  // stage hands back) is counted at its own position.
  const bool own = first == order_[slot.batch * options_.batch + position];
  // `first` is a draw (Sampler::indices): a stand-in keeps its repetition, so its crop differs
  // from the other repetitions' too.
  const int64_t repetition = first / n * n;
  for (int k = 0; k <= kMaxReplacements; ++k) {
    const int64_t draw = (first + k) % n + repetition;
    if (load_sample(w, draw, epoch_, slot, position, /*count_bad=*/k == 0 && own, allow_gpu,
                    have_bytes && k == 0)) {
      slot.indices[position] = draw;
      // Evaluation counts each image once: a bad one's stand-in fills its row for the shapes but
      // carries the padding label, which the scores leave out.
      slot.labels.data_ptr<int64_t>()[position] =
          k > 0 && options_.transform == Transform::kVal ? kPadLabel : w.sample.label;
      return;
    }
    if (options_.on_bad_image == BadImagePolicy::kFail) return;  // load_sample set error_
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.empty())
    error_ = n <= kMaxReplacements
                 ? "every image of " + source_->describe() + " is bad (" + std::to_string(n) +
                       "): is this a JPEG dataset?"
                 : "more than " + std::to_string(kMaxReplacements) + " bad images in a row after " +
                       source_->name(first) + ": is this a JPEG dataset?";
  ready_cv_.notify_all();
}

// The GPU stage threads take the parts of each epoch's batches in order, any free thread the next
// part once its samples are all in, so a batch's GPU work starts while its last samples are still
// being read, and its parts decode side by side on the JPEG engines.  The thread taking a batch's
// first part makes its device tensor; the consumer takes the batch when all parts are done.
void ImageLoader::stage_loop(int id) {
  Stage& st = *stages_[id];
  const int64_t slots = static_cast<int64_t>(ring_.size());
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    stage_cv_.wait(lock, [&] {
      if (stop_) return true;
      const Slot& s = ring_[next_part_ / parts() % slots];
      const int k = static_cast<int>(next_part_ % parts());
      return s.batch == next_part_ / parts() && s.part_filled[k] == part_size(s, k);
    });
    if (stop_) return;
    const int64_t b = next_part_ / parts();
    const int part = static_cast<int>(next_part_++ % parts());
    Slot& slot = ring_[b % slots];
    std::string failure;
    if (part == 0) {  // under the lock, so that the batch's other parts find it made
      try {
        slot.device_images = st.decoder.new_batch(padded_rows(slot), width_, options_.layout);
      } catch (const std::exception& e) {  // the other parts then fail on the undefined tensor
        slot.device_images = torch::Tensor();
        failure = std::string("GPU decoding failed: ") + e.what();
      }
    }
    torch::Tensor out = slot.device_images;
    ++in_flight_;
    lock.unlock();
    stage_cv_.notify_all();  // the next part may be ready for another thread
    if (failure.empty()) {
      try {
        run_stage(st, slot, part, out);
      } catch (const std::exception& e) {
        failure = std::string("GPU decoding failed: ") + e.what();
      }
    }
    lock.lock();
    --in_flight_;
    if (!failure.empty() && error_.empty()) error_ = failure;
    // A failure wakes the consumer at once: the batch's later parts may never fill, since the
    // workers stop claiming samples once an error is set.
    if (++slot.parts_staged == parts() || !failure.empty()) ready_cv_.notify_all();
    if (in_flight_ == 0) idle_cv_.notify_all();
  }
}

void ImageLoader::run_stage(Stage& st, Slot& slot, int part, torch::Tensor& out) {
  const int64_t t0 = now_ns();
  st.jobs.clear();
  st.uploads.clear();
  const int begin = std::min(part_begin(part), slot.expected);
  for (int p = begin; p < begin + part_size(slot, part); ++p) {
    if (!slot.on_gpu[p]) {
      st.uploads.push_back(p);
      continue;
    }
    GpuJpeg job = slot.gpu[p];
    job.data = slot.jpeg[p].data();
    job.size = slot.jpeg[p].size();
    st.jobs.push_back(job);
  }
  if (!out.defined()) FASTER_THROW("the batch's device tensor was not made");
  st.decoder.decode(st.jobs, options_.layout, out, st.refused);
  // Refused images go through the CPU path, bad-image policy included (nvJPEG may have refused
  // a corrupt one), from the bytes read at hand-over (swapped in, so no file is read twice); a
  // decode counts its bytes, so take back the count made at hand-over.
  for (int k : st.refused) {
    const int p = st.jobs[k].position;
    bytes_ -= static_cast<int64_t>(st.jobs[k].size);
    std::swap(st.cpu.sample.bytes, slot.jpeg[p]);
    st.cpu.sample.label = static_cast<int>(slot.labels.data_ptr<int64_t>()[p]);
    process(st.cpu, slot, p, slot.indices[p], /*allow_gpu=*/false, /*have_bytes=*/true);
    std::swap(st.cpu.sample.bytes, slot.jpeg[p]);  // both buffers keep their capacity
    st.uploads.push_back(p);
  }
  st.decoder.upload(slot.images, st.uploads, out);
  const NvjpegTiming timing = st.decoder.take_timing();
  gpu_parse_ns_ += timing.parse_ns, gpu_call_ns_ += timing.call_ns, gpu_wait_ns_ += timing.wait_ns;
  gpu_ns_ += now_ns() - t0;
  const int64_t done = static_cast<int64_t>(st.jobs.size() - st.refused.size());
  gpu_images_ += done;
  images_ += done;
}

// Reads, decodes and augments one sample into its place in the slot; false if the image is bad.
bool ImageLoader::load_sample(Worker& w, int64_t draw, int64_t epoch, Slot& slot, int position,
                              bool count_bad, bool allow_gpu, bool have_bytes) {
  const int64_t index = draw % source_->size();
  try {
    const int64_t t0 = now_ns();
    if (!have_bytes) source_->get(index, w.sample);
    const int64_t t1 = now_ns();
    const uint8_t* bytes = w.sample.bytes.data();
    const size_t size = w.sample.bytes.size();
    // Encoded images are JPEG or PNG (by their signature, whatever their name says).
    const bool png = !pixel_shape_ && is_png(bytes, size);
    if (!pixel_shape_ && !png)
      if (const auto format = unsupported_image_format(bytes, size); !format.empty())
        FASTER_THROW("a ", format, " image: faster reads JPEG and PNG");
    const JpegInfo* info = pixel_shape_ || png ? nullptr : &w.decoder.open(bytes, size);
    const PngInfo png_info = png ? w.png.info(bytes, size) : PngInfo{};
    const int width = info ? info->width : png ? png_info.width : pixel_shape_->width;
    const int height = info ? info->height : png ? png_info.height : pixel_shape_->height;
    RegionF want{0, 0, double(width), double(height)};  // Transform::kNone: the whole image
    bool flip = false;
    if (options_.transform == Transform::kTrain) {
      const TrainCrop tc =
          train_crop(width, height, options_.rrc, options_.sampler.seed, epoch, draw);
      want = {double(tc.crop.x), double(tc.crop.y), double(tc.crop.width), double(tc.crop.height)};
      flip = tc.flip;
    } else if (options_.transform == Transform::kVal) {
      want = center_crop_region(width, height, options_.val_resize, options_.val_size);
    }
    // The GPU takes only JPEG files of the plain layout (one well-formed scan, then the end
    // marker): anything else, damaged files and PNGs included, goes through the CPU in either
    // mode, so both modes deliver and skip the same images.
    if (allow_gpu && !augments() && info && info->one_scan &&
        (info->components == 1 || info->components == 3) && !cpu_takes(w, want)) {
      // The GPU stage decodes it: keep the bytes (swapped, so both buffers keep their capacity).
      GpuJpeg& job = slot.gpu[position];
      job.width = info->width, job.height = info->height;
      job.region = want;
      job.flip = flip;
      job.position = position;
      bytes_ += static_cast<int64_t>(w.sample.bytes.size());
      std::swap(slot.jpeg[position], w.sample.bytes);
      slot.on_gpu[position] = 1;
      read_ns_ += t1 - t0, decode_ns_ += now_ns() - t1;
      return true;
    }
    if (gpu()) slot.on_gpu[position] = 0;
    ImageView image;
    RegionF region = want;  // where `want` lies in `image`
    if (info) {
      const Rect roi = enclosing_rect(want, width, height);
      const Decoded d = w.decoder.decode(roi, width_, height_, w.decoded);
      const double k = d.scale_num / 8.0;  // the decoded region maps roi; `want` sits inside it
      region = {d.region.x + (want.x - roi.x) * k, d.region.y + (want.y - roi.y) * k,
                want.width * k, want.height * k};
      image = w.decoded.view();
      pixels_ += int64_t{w.decoded.width()} * w.decoded.height();
    } else if (png) {  // whole (no DCT scaling): `want` is in its own pixels
      w.png.decode(bytes, size, w.decoded, options_.decoder.gray);
      image = w.decoded.view();
      pixels_ += int64_t{width} * height;
      ++png_images_;
    } else {
      const int c = pixel_shape_->channels;
      image = {w.sample.bytes.data(), width, height, c, static_cast<size_t>(width) * c};
    }
    const int64_t t2 = now_ns();
    if (options_.transform != Transform::kNone) {
      w.resized.reshape(width_, height_, image.channels);
      w.resampler.resample(image, region, w.resized.mutable_view(), options_.filter);
      image = w.resized.view();
    }
    if (augments()) {  // after the crop and its flip, as torchvision's transforms run
      SampleRng rng(options_.sampler.seed ^ kAutoAugmentStream, epoch, draw);
      if (augment_image(options_.auto_augment, rng, flip, w.resized, w.augment))
        flip = false, image = w.resized.view();
    }
    const int64_t per_image = int64_t{channels_} * height_ * width_;
    if (host_uint8())
      store_uint8(image, flip, options_.layout,
                  slot.images.data_ptr<uint8_t>() + position * per_image, channels_);
    else
      store_float(image, flip, options_.layout, options_.norm,
                  slot.images.data_ptr<float>() + position * per_image, channels_);
    const int64_t t3 = now_ns();
    read_ns_ += t1 - t0, decode_ns_ += t2 - t1, augment_ns_ += t3 - t2;
    bytes_ += static_cast<int64_t>(w.sample.bytes.size());
    ++images_;
    return true;
  } catch (const std::exception& e) {
    const std::string what = source_->name(index) + ": " + e.what();
    std::lock_guard<std::mutex> lock(mutex_);
    if (options_.on_bad_image == BadImagePolicy::kFail) {
      if (error_.empty()) error_ = "bad image " + what + " (--on-bad-image skip would skip it)";
      ready_cv_.notify_all();
    } else if (count_bad) {
      ++skipped_;
      if (skipped_names_.size() < kMaxSkippedNames) skipped_names_.push_back(what);
    }
    return false;
  }
}

// With nvJPEG, whether the CPU threads decode this GPU-decodable image anyway (--cpu-share): the
// share of images cheapest for them to decode (cpu_share.h).
bool ImageLoader::cpu_takes(Worker& w, const RegionF& want) {
  const JpegInfo& info = w.decoder.info();
  const Rect roi = enclosing_rect(want, info.width, info.height);
  const int n = w.decoder.choose_scale(roi.width, roi.height, width_, height_);
  const int64_t pixels = int64_t{roi.width} * roi.height * n * n / 64;
  return cheapest_.take(
      cpu_decode_cost(w.sample.bytes.size(), info.height, roi.y + roi.height, pixels),
      share_.load(std::memory_order_relaxed));
}

int ImageLoader::padded_rows(const Slot& slot) const {
  return options_.last_batch == LastBatch::kPad ? options_.batch : slot.expected;
}

std::optional<Batch> ImageLoader::next() {
  const int64_t slots = static_cast<int64_t>(ring_.size());
  // The batch handed out last time is done with: its slot is free once its copy out of the ring
  // has finished (a copy on its own stream, which waits for none of the consumer's steps:
  // device_copy_cuda.cpp).  That wait is made before taking the lock, which the workers and stage
  // threads need for every sample and part (held, it stalled them for up to a step).  consumed_
  // and released_ change only on this, the consumer's, thread.
  const bool release = released_ < consumed_;
  if (release) copy_.wait_slot(static_cast<int>((consumed_ - 1) % slots));
  std::unique_lock<std::mutex> lock(mutex_);
  if (epoch_ < 0) FASTER_THROW("ImageLoader::next() before start_epoch()");
  // Whether a worker ran out of work (the ring full) since the last call: --cpu-share auto.
  const bool threads_waited = std::exchange(ring_waited_, false);
  if (release) {
    released_ = consumed_;
    work_cv_.notify_all();
  }
  if (consumed_ >= batches_per_epoch()) {
    if (!epoch_reported_ && skipped_ > skipped_at_epoch_start_)  // once, at the end of the epoch
      log::warn(options_.transform == Transform::kVal
                    ? std::string("evaluation")
                    : "epoch " + std::to_string(epoch_ + 1),  // as the progress lines count
                ": skipped ", skipped_ - skipped_at_epoch_start_, " bad image(s)",
                options_.transform == Transform::kVal ? " (not counted: a stand-in fills the row)"
                                                      : " (each replaced by the next image)",
                skipped_names_.empty() ? "" : ", first: " + skipped_names_[0]);
    epoch_reported_ = true;
    return std::nullopt;
  }
  const int64_t b = consumed_;
  if (options_.cpu_share.adapt && gpu()) adapt_share_locked(b, threads_waited);
  Slot& slot = ring_[b % slots];
  const Timer waiting;
  const auto ready = [&] {
    return stop_ || !error_.empty() ||
           (slot.batch == b && slot.filled == slot.expected && (!gpu() || staged(slot)));
  };
  if (wait_check_) {  // asked now and then while it waits, without the lock
    while (!ready_cv_.wait_for(lock, std::chrono::milliseconds(50), ready)) {
      lock.unlock();
      wait_check_();
      lock.lock();
    }
  } else {
    ready_cv_.wait(lock, ready);
  }
  wait_s_ += waiting.seconds();
  if (!error_.empty()) throw Error(error_);
  if (stop_) FASTER_THROW("image loader stopped");
  ++consumed_;
  const int n = slot.expected;
  lock.unlock();

  const Timer copying;
  const int rows = padded_rows(slot);
  if (rows > n) {  // padding rows: zero pixels (on the host ring), labels the loss ignores
    if (!gpu()) slot.images.narrow(0, n, rows - n).zero_();
    slot.labels.narrow(0, n, rows - n).fill_(kPadLabel);
  }
  Batch out;
  out.epoch = epoch_;
  out.number = b;
  out.size = n;
  out.indices.resize(n);
  for (int i = 0; i < n; ++i) out.indices[i] = slot.indices[i] % source_->size();
  // Host copies go through DeviceCopy so the slot's event covers them before the slot is refilled
  // (with nvJPEG the images are on the device already).
  out.images = gpu() ? slot.device_images
                     : copy_.copy(slot.images.narrow(0, 0, rows), static_cast<int>(b % slots));
  out.labels = copy_.copy(slot.labels.narrow(0, 0, rows), static_cast<int>(b % slots));
  if (gpu()) {  // made on a stage's stream, used on ours; padding rows zeroed here
    NvjpegDecoder::record_use(out.images);
    if (rows > n) out.images.narrow(0, n, rows - n).zero_();
  }
  if (normalize_.defined()) out.images = normalize_(out.images);
  copy_s_ += copying.seconds();
  return out;
}

// --cpu-share auto, as the consumer asks for batch b: the batches the workers have finished from b
// on, and whether they had run out of work, move the share (cpu_share.h).  Not while the ring
// fills at the start of an epoch, and at its end the batches left count as enough of a lead.
void ImageLoader::adapt_share_locked(int64_t b, bool threads_waited) {
  const int64_t slots = static_cast<int64_t>(ring_.size());
  const int64_t left = batches_per_epoch() - b;
  if (b < slots) return;
  int lead = 0;
  for (int64_t k = b; k < b + std::min(slots, left); ++k) {
    const Slot& s = ring_[k % slots];
    if (s.batch != k || s.filled != s.expected) break;
    ++lead;
  }
  if (lead == left) lead = kAutoShareLead;
  share_.store(adapt_cpu_share(share_.load(std::memory_order_relaxed), lead, threads_waited),
               std::memory_order_relaxed);
}

int64_t ImageLoader::skipped_this_epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return skipped_ - skipped_at_epoch_start_;
}

LoaderStats ImageLoader::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  LoaderStats s;
  s.read_s = read_ns_ * 1e-9, s.decode_s = decode_ns_ * 1e-9, s.augment_s = augment_ns_ * 1e-9;
  s.copy_s = copy_s_, s.wait_s = wait_s_;
  s.gpu_s = gpu_ns_ * 1e-9, s.gpu_images = gpu_images_;
  s.gpu_parse_s = gpu_parse_ns_ * 1e-9, s.gpu_call_s = gpu_call_ns_ * 1e-9;
  s.gpu_wait_s = gpu_wait_ns_ * 1e-9;
  s.images = images_, s.bytes = bytes_, s.skipped = skipped_, s.decoded_pixels = pixels_;
  s.png_images = png_images_;
  s.skipped_names = skipped_names_;
  return s;
}

void ImageLoader::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  reset_stats_locked();
}

void ImageLoader::reset_stats_locked() {
  read_ns_ = decode_ns_ = augment_ns_ = bytes_ = images_ = skipped_ = pixels_ = png_images_ = 0;
  skipped_at_epoch_start_ = 0;  // the epoch's count then starts at the reset
  gpu_ns_ = gpu_images_ = gpu_parse_ns_ = gpu_call_ns_ = gpu_wait_ns_ = 0;
  copy_s_ = wait_s_ = 0;
  skipped_names_.clear();
}

}  // namespace faster::data
