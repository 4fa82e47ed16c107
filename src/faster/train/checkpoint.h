// Weights on disk as a state_dict in PyTorch's own format (a zip archive from torch::pickle_save):
// Python's torch.load reads it and the reference model's load_state_dict takes it.  Loading reads
// those and Python's torch.save(model.state_dict()) archives alike.
#pragma once

#include <ATen/core/Dict.h>
#include <torch/nn/module.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace faster::train {

// A module's parameters, then its buffers, by dotted name in registration order (a state_dict's).
std::vector<std::pair<std::string, torch::Tensor>> named_state(const torch::nn::Module& m);
// A copy an archive owns: on the CPU, compact, not sharing storage with anything else.
torch::Tensor archive_copy(const torch::Tensor& t);
// An archive's bytes (torch::pickle_save's), written atomically and durably.
void write_archive(const std::filesystem::path& path, const std::vector<char>& bytes);

// Writes every parameter and buffer under its dotted name, atomically (temp file + rename).
// `meta` (optional): what the file says of its weights (the model, its classes, the resolution
// and normalization it was trained with, its run), as a record "faster.json" of the archive
// beside the tensors: torch.load and load_state_dict(strict=True) do not see it.
void save_state_dict(const torch::nn::Module& module, const std::filesystem::path& path,
                     const nlohmann::json& meta = nullptr);
// The "faster.json" record of an archive save_state_dict wrote with one; null for any other file.
nlohmann::json read_weights_meta(const std::filesystem::path& path);
// Copies a saved state_dict into `module`; names and shapes must match exactly.
void load_state_dict(torch::nn::Module& module, const std::filesystem::path& path);
// A file of weights or a checkpoint to read: faster::Error (NotFoundError where it is not there)
// for a folder (naming the checkpoint-like files in it), a missing path, anything not a regular
// file; the message starts with `flag` and the path.
void check_weights_file(const std::filesystem::path& path, const std::string& flag);
// The tensors of a saved state_dict (either writer's), on the CPU, by name in the file's order.
// `args` (optional): a checkpoint dict's "args" (torchvision's train.py's arguments) as JSON.
c10::Dict<std::string, torch::Tensor> read_state_dict(const std::filesystem::path& path,
                                                      nlohmann::json* args = nullptr);
// Copies dict[prefix + name] into each parameter and buffer of `module`: every one must be there
// with its shape, and nothing else under the prefix, but the names in `fresh`, which keep their
// values whatever the dict holds of them.  Errors name `path`.
void copy_state_dict(const c10::Dict<std::string, torch::Tensor>& dict, const std::string& prefix,
                     torch::nn::Module& module, const std::filesystem::path& path,
                     const std::set<std::string>& fresh = {});
// Whether a dict read by read_state_dict is a training checkpoint (its model is under "model.").
bool is_checkpoint(const c10::Dict<std::string, torch::Tensor>& dict);
// A checkpoint's meta.json (model, classes, epochs done, the run's options); throws faster::Error
// naming `where` when it is not a faster checkpoint's.
nlohmann::json checkpoint_meta(const c10::Dict<std::string, torch::Tensor>& dict,
                               const std::string& where);

// A training checkpoint: the model's state_dict under "model.", named training-state tensors
// (momentum, EMA, grad scaler) and a JSON record "meta.json" (model, classes, epochs done, step),
// in the same archive format, written atomically.
struct CheckpointPart {
  std::string prefix;                  // "sgd.", "ema.", "scaler."
  std::vector<torch::Tensor> tensors;  // saved as prefix + index; loading copies into them
};
void save_checkpoint(const std::filesystem::path& path, const torch::nn::Module& model,
                     const std::vector<CheckpointPart>& parts, const nlohmann::json& meta);
// Reads a checkpoint: checks it is one (and that `expect`'s keys, such as model and classes, have
// the same values), copies the model state and the parts into the given tensors, returns its meta.
// Throws faster::Error naming the file and what differs.
nlohmann::json load_checkpoint(const std::filesystem::path& path, torch::nn::Module& model,
                               const std::vector<CheckpointPart>& parts,
                               const nlohmann::json& expect);
// Copies a checkpoint's parts (read by read_state_dict) into the given tensors: every one must be
// there with its shape.  Errors name `where`.
void copy_checkpoint_parts(const c10::Dict<std::string, torch::Tensor>& dict,
                           const std::vector<CheckpointPart>& parts, const std::string& where);

}  // namespace faster::train
