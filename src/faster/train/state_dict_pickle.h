// The pickle (data.pkl) of a state_dict archive, as written by Python's
// torch.save(model.state_dict()) and by LibTorch's torch::pickle_save.  LibTorch 1.13's own reader
// (torch::pickle_load) cannot take Python's: it unpickles collections.OrderedDict, the type of
// every state_dict, as None.  This is a small pickle machine for what those two writers emit for a
// dict of tensors (protocols 2-5), and for a checkpoint dict holding one.
#pragma once

#include <ATen/core/Dict.h>
#include <torch/types.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace faster::train {

// The tensor of the storage `key` of the archive (its record data/<key>): `numel` elements of
// `dtype`.
using StorageLoader =
    std::function<torch::Tensor(const std::string& key, torch::ScalarType dtype, int64_t numel)>;

// Name -> tensor, in the pickle's order: the dict itself, or where it is not one, its "model" (or
// "state_dict") entry (torchvision's references' checkpoint.pth).  Throws faster::Error (its
// message prefixed by `where`) on anything else, naming a whole pickled model as such, and on
// opcodes those writers do not use.  `args` (optional): such a checkpoint's "args" as JSON
// (train.py's argparse.Namespace by its attributes, or a dict), else left as it was.
c10::Dict<std::string, torch::Tensor> unpickle_state_dict(const char* data, size_t size,
                                                          const StorageLoader& load_storage,
                                                          const std::string& where,
                                                          nlohmann::json* args = nullptr);

}  // namespace faster::train
