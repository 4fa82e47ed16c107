// The image loader's options before it is built: their ranges (validate), and the decoder
// --decode auto picks from the images' headers (median_jpeg_pixels, auto_decode).
#include <algorithm>
#include <vector>

#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/data/loader/image_loader.h"

namespace faster::data {

int64_t median_jpeg_pixels(const Source& source, int samples) {
  const int64_t n = source.size();
  if (source.pixels() || n == 0 || samples < 1) return 0;
  JpegDecoder decoder;
  Sample sample;
  std::vector<int64_t> pixels;
  int64_t pngs = 0;
  const int64_t k = std::min<int64_t>(samples, n);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t index = i * n / k;
    try {
      source.get(index, sample);
      if (is_png(sample.bytes.data(), sample.bytes.size())) {
        ++pngs;
        continue;
      }
      const JpegInfo& info = decoder.open(sample.bytes.data(), sample.bytes.size());
      pixels.push_back(int64_t{info.width} * info.height);
    } catch (const std::exception&) {  // a bad image says nothing about the others' size
    }
  }
  if (pngs > static_cast<int64_t>(pixels.size())) return -1;  // mostly PNG: nothing for nvJPEG
  if (pixels.empty()) return 0;
  std::nth_element(pixels.begin(), pixels.begin() + pixels.size() / 2, pixels.end());
  return pixels[pixels.size() / 2];
}

DecodeOn auto_decode(const Source& source, const torch::Device& device) {
  // Measured on one H200 with 16 cores (BENCHMARKS.md, "Which decoder"): `faster load` of the same
  // images downscaled to a short side of 32, 64 and 128 px ran 6.8x, 4.8x and 1.2x faster on the
  // CPU, at ImageNet size (about 470x390) 2.4x slower; Fashion-MNIST's 28x28 JPEGs train 2.1x
  // faster decoded on the CPU.
  constexpr int64_t kCpuDecodeMaxPixels = 160 * 160;
  if (!device.is_cuda()) return DecodeOn::kCpu;
  const int64_t pixels = median_jpeg_pixels(source);
  if (pixels < 0) {
    log::info(
        "decode: on the CPU (--decode auto: the images are PNG, which nvJPEG does not "
        "decode)");
    return DecodeOn::kCpu;
  }
  if (pixels == 0 || pixels > kCpuDecodeMaxPixels) return DecodeOn::kNvjpeg;
  log::info("decode: libjpeg-turbo on the CPU (--decode auto: images of about ", pixels,
            " pixels decode faster there than on the GPU; --decode nvjpeg overrides)");
  return DecodeOn::kCpu;
}

void validate(const LoaderOptions& o) {
  check_range("--batch", o.batch, 1, kMaxBatch);
  check_range("--workers", o.workers, 1, kMaxWorkers);
  if (o.transform == Transform::kTrain) check_range("--size", o.size, 8, kMaxSide);
  if (o.transform == Transform::kVal) {
    check_range("--val-size", o.val_size, 8, kMaxSide);
    check_range("--val-resize", o.val_resize, o.val_size, 2 * kMaxSide);
  }
  if (o.channels != 0 && o.channels != 1 && o.channels != 3)
    FASTER_THROW("output channels must be 1 or 3 (got ", o.channels, ")");
  if (o.ring < 0) FASTER_THROW("ring size must not be negative");
  check_range("--cpu-share", o.cpu_share.value, 0, 1);
  check_range("--nvjpeg-threads", o.gpu_stages, 1, 64);
  if (o.decode == DecodeOn::kNvjpeg && !o.device.is_cuda())
    throw Error("--decode nvjpeg decodes on the GPU, but the device is " + o.device.str(),
                "use --device cuda, or --decode cpu");
}

}  // namespace faster::data
