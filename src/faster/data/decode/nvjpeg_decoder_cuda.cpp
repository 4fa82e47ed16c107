// NvjpegDecoder with CUDA: nvJPEG's batched decoder on the hardware backend (the GPU's JPEG
// engines), or its default backend where the GPU has none, into one reused device arena of RGB
// images, then crop_resize_gpu into the batch, all on the decoder's own stream.
//
// nvJPEG facts this relies on: the handle is thread-safe but states and bitstream objects are not
// (one decoder per thread owns all three); the batch size is re-initialized before every call; one
// bad image fails a whole batched call, with no per-image status (all of the call's images then go
// back to the CPU); the hardware decoder writes its outputs when called rather than in stream
// order, so the arena must be idle at each call (decode() ends with a stream sync).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/core/nvjpeg_check.h"
#include "faster/data/augment/crop_resize_gpu.h"
#include "faster/data/decode/nvjpeg_decoder.h"

namespace faster::data {
namespace {

constexpr size_t kAlign = 256;
size_t aligned(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Synchronizes `stream`, adding the time waited to `wait_ns`.
void synchronize(cudaStream_t stream, int64_t& wait_ns, const char* what) {
  const int64_t t0 = now_ns();
  FASTER_CHECK_CUDA(cudaStreamSynchronize(stream), what);
  wait_ns += now_ns() - t0;
}

}  // namespace

struct NvjpegDecoder::Impl {
  torch::Device device;
  c10::cuda::CUDAStream stream;
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  nvjpegJpegStream_t bitstream = nullptr;
  bool hardware = false;
  bool warned = false;        // a batched call failed for a reason other than its images
  bool warned_large = false;  // images went to the CPU for the arena's bound
  unsigned engines = 0, cores = 0;
  torch::Tensor arena;     // decoded RGB images of the current batch (device, grows)
  size_t arena_bytes = 0;  // at most this
  torch::Tensor crops;     // GpuCrop records (device, grows)
  // Per call, kept for their capacity.
  std::vector<const unsigned char*> data;
  std::vector<size_t> lengths;
  std::vector<nvjpegImage_t> images;
  std::vector<size_t> offsets;
  std::vector<int> taken;
  std::vector<GpuCrop> host_crops;
  NvjpegTiming timing;

  Impl(torch::Device d)
      : device(d), stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, d.index())) {}
  ~Impl() {
    if (bitstream) nvjpegJpegStreamDestroy(bitstream);
    if (state) nvjpegJpegStateDestroy(state);
    if (handle) nvjpegDestroy(handle);
  }

  // Grows `t` (device uint8) to at least `bytes`, on the decoder's stream (which is idle here).
  void reserve(torch::Tensor& t, size_t bytes) {
    if (t.defined() && static_cast<size_t>(t.numel()) >= bytes) return;
    const size_t grown = std::max(bytes, t.defined() ? static_cast<size_t>(t.numel()) * 3 / 2 : 0);
    t = torch::empty({static_cast<int64_t>(grown)},
                     torch::TensorOptions().dtype(torch::kUInt8).device(device));
  }
};

NvjpegDecoder::NvjpegDecoder(torch::Device device, int max_batch, size_t arena_bytes) {
  if (!device.is_cuda())
    FASTER_THROW("--decode nvjpeg needs a CUDA device (got ", device.str(), ")");
  if (!torch::cuda::is_available()) FASTER_THROW("--decode nvjpeg: no CUDA GPU is visible");
  if (device.index() < 0) device = torch::Device(torch::kCUDA, c10::cuda::current_device());
  c10::cuda::CUDAGuard guard(device);
  impl_ = std::make_unique<Impl>(device);
  Impl& m = *impl_;
  m.arena_bytes = arena_bytes;
  const nvjpegStatus_t hw =
      nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &m.handle);
  if (hw == NVJPEG_STATUS_SUCCESS) {
    m.hardware = true;
    if (nvjpegGetHardwareDecoderInfo(m.handle, &m.engines, &m.cores) != NVJPEG_STATUS_SUCCESS)
      m.engines = m.cores = 0;
  } else {
    m.handle = nullptr;
    FASTER_CHECK_NVJPEG(
        nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &m.handle),
        "create");
  }
  FASTER_CHECK_NVJPEG(nvjpegJpegStateCreate(m.handle, &m.state), "state create");
  FASTER_CHECK_NVJPEG(nvjpegJpegStreamCreate(m.handle, &m.bitstream), "bitstream create");
  if (m.hardware)  // a size hint for the hardware decoder's buffers; they still grow as needed
    (void)nvjpegDecodeBatchedPreAllocate(m.handle, m.state, std::max(1, max_batch), 512, 512,
                                         NVJPEG_CSS_444, NVJPEG_OUTPUT_RGBI);
}

NvjpegDecoder::~NvjpegDecoder() = default;

bool NvjpegDecoder::hardware() const {
  return impl_->hardware;
}

std::string NvjpegDecoder::describe() const {
  const Impl& m = *impl_;
  if (!m.hardware) return "nvJPEG CUDA decoder (this GPU has no hardware JPEG decoder)";
  std::string s = "nvJPEG hardware decoder";
  if (m.engines > 0)
    s += " (" + std::to_string(m.engines) + " engines x " + std::to_string(m.cores) + " cores)";
  return s;
}

torch::Tensor NvjpegDecoder::new_batch(int batch, int size, Layout layout) {
  Impl& m = *impl_;
  c10::cuda::CUDAGuard guard(m.device);
  c10::cuda::CUDAStreamGuard on_stream(m.stream);  // the allocation belongs to this stream
  return torch::empty(batch_shape(layout, batch, 3, size, size),
                      torch::TensorOptions().dtype(torch::kUInt8).device(m.device));
}

void NvjpegDecoder::decode(const std::vector<GpuJpeg>& jobs, Layout layout, torch::Tensor& out,
                           std::vector<int>& refused) {
  Impl& m = *impl_;
  c10::cuda::CUDAGuard guard(m.device);
  c10::cuda::CUDAStreamGuard on_stream(m.stream);  // allocations below belong to this stream
  const int size = static_cast<int>(out.size(layout == Layout::kNCHW ? 2 : 1));
  refused.clear();
  const int64_t t0 = now_ns();

  // Which images nvJPEG takes (the header as nvJPEG reads it must agree with ours), and where each
  // goes in the arena.
  m.taken.clear(), m.offsets.clear();
  size_t total = 0;
  for (int i = 0; i < static_cast<int>(jobs.size()); ++i) {
    const GpuJpeg& j = jobs[i];
    bool ok =
        nvjpegJpegStreamParseHeader(m.handle, j.data, j.size, m.bitstream) == NVJPEG_STATUS_SUCCESS;
    unsigned w = 0, h = 0;
    ok = ok && nvjpegJpegStreamGetFrameDimensions(m.bitstream, &w, &h) == NVJPEG_STATUS_SUCCESS &&
         static_cast<int>(w) == j.width && static_cast<int>(h) == j.height;
    int unsupported = 0;
    if (ok && m.hardware)
      ok = nvjpegDecodeBatchedSupported(m.handle, m.bitstream, &unsupported) ==
               NVJPEG_STATUS_SUCCESS &&
           unsupported == 0;
    if (!ok) {
      refused.push_back(i);
      continue;
    }
    const size_t bytes = aligned(static_cast<size_t>(j.width) * 3 * j.height);
    if (total + bytes > m.arena_bytes) {
      if (!std::exchange(m.warned_large, true))
        log::warn("nvJPEG: images past ", m.arena_bytes >> 20, " MiB of decoded pixels per call (",
                  j.width, "x", j.height, " and others) are decoded on the CPU; for a dataset ",
                  "of large photographs, 'faster resize' makes a smaller copy that loads faster");
      refused.push_back(i);
      continue;
    }
    m.taken.push_back(i);
    m.offsets.push_back(total);
    total += bytes;
  }
  const int n = static_cast<int>(m.taken.size());
  const int64_t t1 = now_ns();
  m.timing.parse_ns += t1 - t0;
  if (n == 0) return;

  try {
    m.reserve(m.arena, total);
  } catch (const c10::Error& e) {  // out of memory beside the training: the CPU decodes these
    if (!std::exchange(m.warned, true))
      log::warn("nvJPEG: no GPU memory for a batch's decoded images (",
                std::string(e.what_without_backtrace()).substr(0, 120),
                "): the CPU decodes the images of such calls instead");
    for (int i : m.taken) refused.push_back(i);
    std::sort(refused.begin(), refused.end());
    return;
  }
  uint8_t* arena = m.arena.data_ptr<uint8_t>();
  m.data.resize(n), m.lengths.resize(n), m.images.assign(n, nvjpegImage_t{});
  m.host_crops.resize(n);
  for (int k = 0; k < n; ++k) {
    const GpuJpeg& j = jobs[m.taken[k]];
    m.data[k] = j.data;
    m.lengths[k] = j.size;
    m.images[k].channel[0] = arena + m.offsets[k];
    m.images[k].pitch[0] = static_cast<size_t>(j.width) * 3;
    GpuCrop& c = m.host_crops[k];
    c.src = arena + m.offsets[k];
    c.width = j.width, c.height = j.height, c.pitch = j.width * 3;
    c.x = static_cast<float>(j.region.x), c.y = static_cast<float>(j.region.y);
    c.w = static_cast<float>(j.region.width), c.h = static_cast<float>(j.region.height);
    c.flip = j.flip ? 1 : 0;
    c.position = j.position;
  }
  cudaStream_t stream = m.stream.stream();
  // Before the decode: a copy from pageable memory first waits for the stream's earlier work (here
  // none), and returns once staged, so host_crops may be reused right away.
  m.reserve(m.crops, sizeof(GpuCrop) * n);
  auto* crops = reinterpret_cast<GpuCrop*>(m.crops.data_ptr<uint8_t>());
  FASTER_CHECK_CUDA(cudaMemcpyAsync(crops, m.host_crops.data(), sizeof(GpuCrop) * n,
                                    cudaMemcpyHostToDevice, stream),
                    "copy of crop records");
  nvjpegStatus_t s = nvjpegDecodeBatchedInitialize(m.handle, m.state, n, 1, NVJPEG_OUTPUT_RGBI);
  if (s == NVJPEG_STATUS_SUCCESS)
    s = nvjpegDecodeBatched(m.handle, m.state, m.data.data(), m.lengths.data(), m.images.data(),
                            stream);
  if (s != NVJPEG_STATUS_SUCCESS) {  // no per-image status: the CPU redoes all of the call's images
    // A failure that is not about the images (memory, the engines) would otherwise send every
    // image to the CPU without a word: said once per decoder.
    if (s != NVJPEG_STATUS_BAD_JPEG && s != NVJPEG_STATUS_JPEG_NOT_SUPPORTED &&
        !std::exchange(m.warned, true))
      log::warn("nvJPEG's batched decode failed (", detail::nvjpeg_status_name(s), ", ",
                static_cast<int>(s), "): the CPU decodes the images of such calls instead");
    m.timing.call_ns += now_ns() - t1;
    synchronize(stream, m.timing.wait_ns, "synchronize after a failed nvJPEG batch");
    for (int i : m.taken) refused.push_back(i);
    std::sort(refused.begin(), refused.end());
    return;
  }
  crop_resize_gpu(crops, n, size, layout == Layout::kNCHW, out.data_ptr<uint8_t>(), stream);
  m.timing.call_ns += now_ns() - t1;
  synchronize(stream, m.timing.wait_ns, "nvJPEG decode and resize");
  // refused is in ascending order: filled by the loop above
}

void NvjpegDecoder::upload(const torch::Tensor& host, const std::vector<int>& positions,
                           torch::Tensor& out) {
  if (positions.empty()) return;
  Impl& m = *impl_;
  c10::cuda::CUDAGuard guard(m.device);
  c10::cuda::CUDAStreamGuard on_stream(m.stream);
  const int64_t t0 = now_ns();
  for (int p : positions) out[p].copy_(host[p], /*non_blocking=*/true);
  m.timing.call_ns += now_ns() - t0;
  synchronize(m.stream.stream(), m.timing.wait_ns, "upload of CPU-decoded images");
}

NvjpegTiming NvjpegDecoder::take_timing() {
  return std::exchange(impl_->timing, NvjpegTiming{});
}

void NvjpegDecoder::record_use(const torch::Tensor& t) {
  if (t.defined() && t.is_cuda())
    t.record_stream(c10::cuda::getCurrentCUDAStream(t.device().index()));
}

}  // namespace faster::data
