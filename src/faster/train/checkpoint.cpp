// state_dict save/load through the pickle format that torch.load understands.
#include "faster/train/checkpoint.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include <fstream>
#include <iterator>

#include "faster/core/error.h"
#include "faster/tools/file_io.h"

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

void load_state_dict(torch::nn::Module& module, const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FASTER_THROW(path.string(), ": cannot open");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto value = torch::pickle_load(bytes);
  if (!value.isGenericDict()) FASTER_THROW(path.string(), ": not a state_dict");
  const auto dict = value.toGenericDict();
  torch::NoGradGuard no_grad;
  auto state = named_state(module);
  if (static_cast<size_t>(dict.size()) != state.size())
    FASTER_THROW(path.string(), ": ", dict.size(), " entries, the model has ", state.size());
  for (auto& [name, t] : state) {
    auto it = dict.find(name);
    if (it == dict.end()) FASTER_THROW(path.string(), ": missing '", name, "'");
    const auto src = it->value().toTensor();
    if (src.sizes() != t.sizes())
      FASTER_THROW(path.string(), ": '", name, "' has shape ", src.sizes(), ", expected ", t.sizes());
    t.copy_(src);
  }
}

}  // namespace faster::train
