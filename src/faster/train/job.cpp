// The job a run belongs to: its device, its rank and the other ranks (DDP), DataParallel's GPUs;
// and what the ranks check together before they train.
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <cstdlib>

#include "faster/core/error.h"
#include "faster/core/gpu_info.h"
#include "faster/core/launch_env.h"
#include "faster/core/log.h"
#include "faster/train/cpu_runtime.h"
#include "faster/train/run.h"

namespace faster::train {
namespace {

// The process's place in a DDP job and its device (its local rank's; the one a Slurm task sees);
// a world of one otherwise.
std::unique_ptr<Dist> join_job(const TrainOptions& o, WorldInfo& world, torch::Device& device) {
  if (o.parallel != Parallel::kDdp) return nullptr;
  world = world_from_env();
  // From here every line of this rank, its error too, starts with "rank N: ".
  if (world.world > 1) log::set_source("rank " + std::to_string(world.rank) + ": ");
  if (device.is_cuda()) {
    const int n = cuda_device_count();
    // A Slurm task that sees one GPU (--gpus-per-task 1) uses it (core/launch_env.h); a world of
    // one that no launcher started, --device's (it went to GPU 0 whatever --device said); every
    // other rank its local rank's.
    const bool own_gpu =
        launch_env::one_gpu_per_task([](const char* name) { return std::getenv(name); });
    const int index = own_gpu                    ? 0
                      : world.source == "single" ? std::max<int>(0, device.index())
                                                 : world.local_rank;
    if (index >= n)
      throw Error("local rank " + std::to_string(world.local_rank) + ", but only " +
                      std::to_string(n) + " CUDA device(s) are visible",
                  "start at most " + std::to_string(n) +
                      " ranks per node (--nproc, torchrun --nproc-per-node)");
    device = torch::Device(torch::kCUDA, index);
    c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).setDevice(device);
  }
  return Dist::connect(world, device, std::chrono::seconds(o.dist_timeout_s));
}

std::vector<torch::Device> dp_devices(const TrainOptions& o) {
  std::vector<torch::Device> devices;
  if (o.parallel != Parallel::kDp) return devices;
  const int n = o.gpus > 0 ? o.gpus : cuda_device_count();
  for (int i = 0; i < n; ++i) devices.emplace_back(torch::kCUDA, i);
  return devices;
}

}  // namespace

Job join(const TrainOptions& o) {
  Job job;
  job.device = resolve_device(o.device);
  job.dist = join_job(o, job.world, job.device);
  if (job.device.is_cpu()) configure_cpu_runtime(job.world.local_world);
  job.dp = dp_devices(o);
  if (job.device.is_cuda() && o.gpu_wait != GpuWait::kAuto)  // every device the run uses, first
    for (const auto& d : job.dp.empty() ? std::vector<torch::Device>{job.device} : job.dp)
      set_gpu_wait(d.index(), o.gpu_wait);
  return job;
}

// Whether every rank says `mine` (a collective: all ranks call it).
bool every_rank(Dist& dist, bool mine, torch::Device device) {
  auto count = torch::full({1}, mine ? 1.0f : 0.0f, torch::TensorOptions().device(device));
  dist.all_reduce_sum(count);
  return count.item<float>() == static_cast<float>(dist.world().world);
}

// Ranks started with other settings (two command lines, ranks started by hand) would train out of
// step and wait in a collective until --dist-timeout, or fail there with Gloo's or NCCL's words:
// they compare theirs with rank 0's first (the data's path may differ from node to node, the
// class count may not).
void check_ranks_agree(Dist& dist, const nlohmann::json& options, int classes,
                       torch::Device device) {
  nlohmann::json mine = {{"model", options.value("model", "")},
                         {"epochs", options.value("epochs", 0)},
                         {"classes", classes}};
  for (const char* key : kRunKeys)
    if (std::string(key) != "data" && options.contains(key)) mine[key] = options[key];
  // And what shapes the collectives: the model's widths, what is trained, how gradients are sent.
  for (const char* key : {"blocks", "filters", "stem_dims", "freeze_whitening", "sync_bn",
                          "bucket_mb", "channels_last"})
    if (options.contains(key)) mine[key] = options[key];
  const std::string text = mine.dump();
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  const auto on = torch::TensorOptions().device(device);
  auto first = torch::full({1}, static_cast<int64_t>(hash), on.dtype(torch::kLong));
  dist.broadcast_from_rank0(first);
  const bool same = first.item<int64_t>() == static_cast<int64_t>(hash);
  if (!every_rank(dist, same, device))
    throw Error(same ? "other ranks were started with other settings than rank 0"
                     : "this rank was started with other settings than rank 0 (model, widths, "
                       "epochs, classes, batch, rates, schedule, seed, augmentation or "
                       "--bucket-mb)",
                "start every rank with the same flags and data (torchrun and srun run one "
                "command line)");
}

}  // namespace faster::train
