// state_dict save/load through the pickle format that torch.load understands.
#include "faster/train/checkpoint.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <cstring>
#include <memory>

#include "faster/core/error.h"
#include "faster/tools/file_io.h"
#include "faster/train/state_dict_pickle.h"

namespace faster::train {
namespace fs = std::filesystem;

namespace {
// Parameters and buffers by dotted name, in registration order.
std::vector<std::pair<std::string, torch::Tensor>> named_state(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
  for (const auto& b : m.named_buffers()) out.emplace_back(b.key(), b.value());
  return out;
}
}  // namespace

void save_state_dict(const torch::nn::Module& module, const fs::path& path) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, t] : named_state(module))
    dict.insert(name, t.detach().to(torch::kCPU).contiguous().clone());  // own, compact storage
  const auto bytes = torch::pickle_save(dict);
  tools::write_file_atomic(path, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// The zip archive (torch.save's format since PyTorch 1.6): data.pkl and one record data/<key> per
// storage.  Its pickle goes through unpickle_state_dict, not torch::pickle_load, which in LibTorch
// 1.13 reads Python's OrderedDict as None.
c10::Dict<std::string, torch::Tensor> read_state_dict(const fs::path& path) {
  const auto where = path.string();
  if (!fs::is_regular_file(path)) FASTER_THROW(where, ": cannot open");
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(where);
  } catch (const c10::Error&) {
    FASTER_THROW(where, ": not a PyTorch zip archive (torch.save's format since PyTorch 1.6)");
  }
  const auto record = [&](const std::string& name) {
    if (!zip->hasRecord(name)) FASTER_THROW(where, ": the archive has no ", name);
    return zip->getRecord(name);
  };
  const auto load_storage = [&](const std::string& key, torch::ScalarType dtype, int64_t numel) {
    auto [data, bytes] = record("data/" + key);
    auto t = torch::empty({numel}, torch::dtype(dtype));
    if (bytes < t.nbytes())
      FASTER_THROW(where, ": storage ", key, " is shorter than its ", numel, " elements");
    std::memcpy(t.data_ptr(), data.get(), t.nbytes());
    return t;
  };
  auto [pickle, size] = record("data.pkl");
  return unpickle_state_dict(static_cast<const char*>(pickle.get()), size, load_storage, where);
}

void load_state_dict(torch::nn::Module& module, const fs::path& path) {
  const auto dict = read_state_dict(path);
  torch::NoGradGuard no_grad;
  auto state = named_state(module);
  if (static_cast<size_t>(dict.size()) != state.size())
    FASTER_THROW(path.string(), ": ", dict.size(), " entries, the model has ", state.size());
  for (auto& [name, t] : state) {
    auto it = dict.find(name);
    if (it == dict.end()) FASTER_THROW(path.string(), ": missing '", name, "'");
    const auto& src = it->value();
    if (src.sizes() != t.sizes())
      FASTER_THROW(path.string(), ": '", name, "' has shape ", src.sizes(), ", expected ", t.sizes());
    t.copy_(src);
  }
}

}  // namespace faster::train
