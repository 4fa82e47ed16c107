// With nvJPEG, the share of GPU-decodable images that the loader's CPU threads decode instead
// (`--cpu-share`): a fixed fraction, or `auto`, which moves it after every batch.  Why a share at
// all: the GPU's JPEG work slows the training's kernels (and theirs it), while the CPU threads
// hardly touch the training (BENCHMARKS.md), so the CPU should take as many images as it keeps up
// with.  Torch-free: the command line parses it where `faster` and `faster-torch` both see it.
#pragma once

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

}  // namespace faster::data
