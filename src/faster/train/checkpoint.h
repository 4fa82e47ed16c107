// Weights on disk as a state_dict in PyTorch's own format (a zip archive from torch::pickle_save):
// Python's torch.load reads it and the reference model's load_state_dict takes it.  Loading reads
// those and Python's torch.save(model.state_dict()) archives alike.
#pragma once

#include <ATen/core/Dict.h>
#include <torch/nn/module.h>

#include <filesystem>
#include <string>

namespace faster::train {

// Writes every parameter and buffer under its dotted name, atomically (temp file + rename).
void save_state_dict(const torch::nn::Module& module, const std::filesystem::path& path);
// Copies a saved state_dict into `module`; names and shapes must match exactly.
void load_state_dict(torch::nn::Module& module, const std::filesystem::path& path);
// The tensors of a saved state_dict (either writer's), on the CPU, by name in the file's order.
c10::Dict<std::string, torch::Tensor> read_state_dict(const std::filesystem::path& path);

}  // namespace faster::train
