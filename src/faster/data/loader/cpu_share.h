// With nvJPEG, the share of GPU-decodable images that the loader's CPU threads decode instead
// (`--cpu-share`): a fixed fraction, or `auto`, which moves it after every batch.  Why a share at
// all: the GPU's JPEG work slows the training's kernels (and theirs it), while the CPU threads
// hardly touch the training (BENCHMARKS.md), so the CPU should take as many images as it keeps up
// with.  Torch-free: the command line parses it where `faster` and `faster-torch` both see it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace faster::data {

struct CpuShare {
  double value = 0.0;  // the fixed share, or where `auto` starts
  bool adapt = false;  // `auto`
  bool operator==(const CpuShare& o) const { return value == o.value && adapt == o.adapt; }
};

// Where `auto` starts: a quarter, the best fixed share on an H200 with 16 cores (BENCHMARKS.md).
constexpr double kAutoShareStart = 0.25;

// "auto" or a number in 0..1 (a UsageError naming `flag` otherwise).
CpuShare parse_cpu_share(const std::string& text, const char* flag = "--cpu-share");
// "auto" or the number, as parse_cpu_share reads it back.
std::string to_string(const CpuShare& share);

// What `auto` sees when the consumer asks for a batch: `lead`, the batches from that one on that
// the CPU threads have finished (their images decoded, the rest handed to the GPU's stage);
// `threads_waited`, whether a CPU thread found every sample the ring lets them have claimed since
// the last batch was asked for (out of work: the CPU has time to spare).  The CPU falling behind
// (lead under `kAutoShareLead`) gives images back to the GPU at once; a CPU with time to spare
// takes a little more; in between the share holds.  Small steps up, larger ones down: the share
// settles where the CPU just keeps up (within a step of it in tests/data/cpu_share_test.cpp's
// simulated pipeline).
constexpr int kAutoShareLead = 2;
constexpr double kAutoShareUp = 0.005, kAutoShareDown = 0.02;
double adapt_cpu_share(double share, int lead, bool threads_waited);

// Which images the CPU threads take, for a share s: the cheapest for them.  libjpeg decodes a crop
// by entropy-decoding the file down to the crop's last row and rebuilding only the crop's pixels
// (then resampled), so its cost follows the file's size and where the crop lies; nvJPEG decodes
// every image whole, so the crop does not change its cost (the file's size still does).  Taking
// the share of images cheapest for the CPU, it decodes 1.4-1.5x as many per CPU second as with a
// share picked regardless of cost (at shares of 0.4-0.5, `faster synth` files, BENCHMARKS.md).
//
// The estimated CPU time of one image, in nanoseconds: `bytes` of entropy-coded data of which the
// part above `bottom` of `height` rows is decoded, and `pixels` rebuilt and resampled.  The weights
// are libjpeg-turbo 2.1's on one core (a least-squares fit over `faster synth` train crops).
double cpu_decode_cost(size_t bytes, int height, int bottom, int64_t pixels);

// Picks, among images offered one at a time, a share of them with the lowest costs: an image goes
// to the CPU when its cost is under a threshold that follows the share-quantile of the costs seen
// (a stochastic-approximation quantile: down a step for every image taken, up for every image
// left, in proportion to the share, so that a share of the images fall under it).  Thread-safe.
class CheapestShare {
 public:
  // Whether the CPU takes an image of `cost`: all of them at a share of 1, none at 0.
  bool take(double cost, double share);

  // The threshold's step, as a fraction of the mean cost: down (1 - share) of it for an image
  // taken, up share of it for one left (at a share of 0.4, a thousand images move it 1.2 means).
  static constexpr double kStep = 0.003;

 private:
  std::mutex mutex_;
  double threshold_ = 0, mean_ = 0;
  bool started_ = false;
};

}  // namespace faster::data
