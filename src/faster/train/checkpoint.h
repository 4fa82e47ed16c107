// Weights on disk as a state_dict in PyTorch's own format (a zip archive from torch::pickle_save):
// Python's torch.load reads it and the reference model's load_state_dict takes it.
#pragma once

#include <torch/nn/module.h>

#include <filesystem>

namespace faster::train {

// Writes every parameter and buffer under its dotted name, atomically (temp file + rename).
void save_state_dict(const torch::nn::Module& module, const std::filesystem::path& path);
// Copies a saved state_dict into `module`; names and shapes must match exactly.
void load_state_dict(torch::nn::Module& module, const std::filesystem::path& path);

}  // namespace faster::train
