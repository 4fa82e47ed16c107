// state_dict save/load through the pickle format that torch.load understands.
#include "faster/train/checkpoint.h"

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <cstring>
#include <fstream>
#include <memory>

#include "faster/core/error.h"
#include "faster/tools/file_io.h"
#include "faster/train/archive_check.h"
#include "faster/train/state_dict_pickle.h"

namespace faster::train {
namespace fs = std::filesystem;

std::vector<std::pair<std::string, torch::Tensor>> named_state(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
  for (const auto& b : m.named_buffers()) out.emplace_back(b.key(), b.value());
  return out;
}

torch::Tensor archive_copy(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU).contiguous().clone();
}

void write_archive(const fs::path& path, const std::vector<char>& bytes) {
  tools::write_file_atomic(path, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), {},
                           /*durable=*/true);
}

namespace {
constexpr const char* kWeightsMeta = "faster.json";

// pickle_save's archive with one more record, `name`: the others copied as they are, but for
// those the writer makes itself when it ends.
std::vector<char> with_record(const std::vector<char>& archive, const std::string& name,
                              const std::string& text) {
  namespace serialize = caffe2::serialize;
  serialize::PyTorchStreamReader reader(
      std::make_shared<serialize::MemoryReadAdapter>(archive.data(), archive.size()));
  std::vector<char> out;
  serialize::PyTorchStreamWriter writer([&out](const void* data, size_t size) {
    const auto* bytes = static_cast<const char*>(data);
    out.insert(out.end(), bytes, bytes + size);
    return size;
  });
  for (const auto& record : reader.getAllRecords()) {
    if (record == "version" || record == ".data/version" || record == ".data/serialization_id")
      continue;
    auto [data, size] = reader.getRecord(record);
    writer.writeRecord(record, data.get(), size);
  }
  writer.writeRecord(name, text.data(), text.size());
  writer.writeEndOfFile();
  return out;
}

void write_dict(const fs::path& path, const c10::Dict<std::string, torch::Tensor>& dict,
                const nlohmann::json& meta = nullptr) {
  auto bytes = torch::pickle_save(dict);
  if (!meta.is_null()) bytes = with_record(bytes, kWeightsMeta, meta.dump());
  write_archive(path, bytes);
}

}  // namespace

void save_state_dict(const torch::nn::Module& module, const fs::path& path,
                     const nlohmann::json& meta) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, t] : named_state(module)) dict.insert(name, archive_copy(t));
  write_dict(path, dict, meta);
}

nlohmann::json read_weights_meta(const fs::path& path) {
  try {
    caffe2::serialize::PyTorchStreamReader zip(path.string());
    if (!zip.hasRecord(kWeightsMeta)) return nullptr;
    auto [data, size] = zip.getRecord(kWeightsMeta);
    auto meta = nlohmann::json::parse(static_cast<const char*>(data.get()),
                                      static_cast<const char*>(data.get()) + size, nullptr,
                                      /*allow_exceptions=*/false);
    return meta.is_object() ? meta : nlohmann::json(nullptr);
  } catch (const c10::Error&) {
    return nullptr;  // not a PyTorch archive
  }
}

// The zip archive (torch.save's format since PyTorch 1.6): data.pkl and one record data/<key> per
// storage.  Its pickle goes through unpickle_state_dict, not torch::pickle_load, which in LibTorch
// 1.13 reads Python's OrderedDict as None.
void check_weights_file(const fs::path& path, const std::string& flag) {
  std::error_code ec;
  const std::string named = flag.empty() ? path.string() : flag + " " + path.string();
  if (fs::is_directory(path, ec)) {
    // A folder given where a file is expected: the files in it that could be meant.
    std::string candidates;
    int found = 0;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const auto ext = e.path().extension().string();
      if (e.is_regular_file(ec) && (ext == ".ckpt" || ext == ".pt" || ext == ".pth") && found < 3)
        candidates += (found++ ? ", " : "") + e.path().filename().string();
    }
    throw Error(named + " is a folder, not a file",
                found ? "it holds " + candidates + ": name one of them" : "name the file in it");
  }
  if (!fs::exists(path, ec)) FASTER_NOT_FOUND(named, ": no such file");
  if (!fs::is_regular_file(path, ec)) FASTER_THROW(named, " is not a regular file");
}

c10::Dict<std::string, torch::Tensor> read_state_dict(const fs::path& path, nlohmann::json* args) {
  const auto where = path.string();
  check_weights_file(path, "");
  check_archive_crcs(path);  // LibTorch's reader does not
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(where);
  } catch (const c10::Error&) {
    // A zip's start (its first local header) without the end record of its directory (in its
    // last 64 KiB + 22 bytes): cut short.  A whole zip of another kind is just not torch.save's.
    std::ifstream in(path, std::ios::binary);
    std::string head(4, '\0'), tail;
    in.read(head.data(), 4);
    const auto size = static_cast<std::streamoff>(fs::file_size(path));
    const std::streamoff from = std::max<std::streamoff>(0, size - 65557);
    in.clear();
    in.seekg(from);
    tail.resize(static_cast<size_t>(size - from));
    in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
    if (head == "PK\x03\x04" && tail.find("PK\x05\x06") == std::string::npos)
      FASTER_THROW(where, ": a zip archive without its end (", size,
                   " bytes): truncated; an interrupted copy?");
    FASTER_THROW(where, ": not a PyTorch zip archive (torch.save's format since PyTorch 1.6)");
  }
  const auto record = [&](const std::string& name) {
    if (!zip->hasRecord(name)) FASTER_THROW(where, ": the archive has no ", name);
    return zip->getRecord(name);
  };
  // Its errors are prefixed by `where` where the pickle's are.
  const auto load_storage = [&](const std::string& key, torch::ScalarType dtype, int64_t numel) {
    const std::string name = "data/" + key;
    if (!zip->hasRecord(name)) FASTER_THROW("the archive has no ", name);
    auto [data, bytes] = zip->getRecord(name);
    // Checked before anything is allocated: a storage claims no more than its record holds.
    int64_t need = 0;
    if (numel < 0 ||
        __builtin_mul_overflow(numel, static_cast<int64_t>(c10::elementSize(dtype)), &need) ||
        static_cast<uint64_t>(need) > bytes)
      FASTER_THROW("storage ", key, " is shorter than its ", numel, " elements");
    auto t = torch::empty({numel}, torch::dtype(dtype));
    std::memcpy(t.data_ptr(), data.get(), t.nbytes());
    return t;
  };
  auto [pickle, size] = record("data.pkl");
  return unpickle_state_dict(static_cast<const char*>(pickle.get()), size, load_storage, where,
                             args);
}

void copy_state_dict(const c10::Dict<std::string, torch::Tensor>& dict, const std::string& prefix,
                     torch::nn::Module& module, const fs::path& path,
                     const std::set<std::string>& fresh) {
  torch::NoGradGuard no_grad;
  auto state = named_state(module);
  int64_t under_prefix = 0;
  for (const auto& kv : dict)
    under_prefix += kv.key().rfind(prefix, 0) == 0 && !fresh.count(kv.key().substr(prefix.size()));
  if (static_cast<size_t>(under_prefix) != state.size() - fresh.size())
    FASTER_THROW(path.string(), ": ", under_prefix, " entries, the model has ",
                 state.size() - fresh.size());
  for (auto& [name, t] : state) {
    if (fresh.count(name)) continue;
    auto it = dict.find(prefix + name);
    if (it == dict.end()) FASTER_THROW(path.string(), ": missing '", prefix + name, "'");
    const auto& src = it->value();
    if (src.sizes() != t.sizes())
      FASTER_THROW(path.string(), ": '", name, "' has shape ", src.sizes(), ", expected ",
                   t.sizes());
    t.copy_(src);
  }
}

namespace {
constexpr const char* kMetaKey = "meta.json";
constexpr const char* kFormat = "faster checkpoint";
}  // namespace

bool is_checkpoint(const c10::Dict<std::string, torch::Tensor>& dict) {
  return dict.contains(kMetaKey);
}

void load_state_dict(torch::nn::Module& module, const fs::path& path) {
  const auto dict = read_state_dict(path);
  if (dict.contains(kMetaKey))
    FASTER_THROW(path.string(), " is a training checkpoint, not a state_dict (--resume takes it)");
  copy_state_dict(dict, "", module, path);
}

void save_checkpoint(const fs::path& path, const torch::nn::Module& model,
                     const std::vector<CheckpointPart>& parts, const nlohmann::json& meta) {
  c10::Dict<std::string, torch::Tensor> dict;
  auto m = meta;
  m["format"] = kFormat;
  const std::string text = m.dump();
  dict.insert(kMetaKey, torch::from_blob(const_cast<char*>(text.data()),
                                         {static_cast<int64_t>(text.size())}, torch::kUInt8)
                            .clone());
  for (const auto& [name, t] : named_state(model)) dict.insert("model." + name, archive_copy(t));
  for (const auto& part : parts)
    for (size_t i = 0; i < part.tensors.size(); ++i)
      dict.insert(part.prefix + std::to_string(i), archive_copy(part.tensors[i]));
  write_dict(path, dict);
}

nlohmann::json checkpoint_meta(const c10::Dict<std::string, torch::Tensor>& dict,
                               const std::string& where) {
  if (!dict.contains(kMetaKey))
    FASTER_THROW(where,
                 " is not a faster training checkpoint (a state_dict, as --save writes? faster "
                 "eval --weights reads those)");
  const auto text = dict.at(kMetaKey).contiguous();
  nlohmann::json meta = nlohmann::json::parse(
      std::string(reinterpret_cast<const char*>(text.data_ptr<uint8_t>()), text.numel()), nullptr,
      /*allow_exceptions=*/false);
  if (!meta.is_object() || meta.value("format", "") != kFormat)
    FASTER_THROW(where, ": its meta.json is not a faster checkpoint's");
  return meta;
}

nlohmann::json load_checkpoint(const fs::path& path, torch::nn::Module& model,
                               const std::vector<CheckpointPart>& parts,
                               const nlohmann::json& expect) {
  const auto dict = read_state_dict(path);
  const auto where = path.string();
  const nlohmann::json meta = checkpoint_meta(dict, where);
  // The model first: "written for resnet18" says more than the class count that follows from it.
  std::vector<std::string> keys;
  if (expect.contains("model")) keys.push_back("model");
  for (const auto& [key, value] : expect.items())
    if (key != "model") keys.push_back(key);
  for (const auto& key : keys)
    if (!meta.contains(key) || meta[key] != expect[key])
      FASTER_THROW(where, " was written with ", key, " ",
                   meta.contains(key) ? meta[key].dump() : std::string("(none)"), ", this run has ",
                   expect[key].dump());
  copy_state_dict(dict, "model.", model, path);
  copy_checkpoint_parts(dict, parts, where);
  return meta;
}

void copy_checkpoint_parts(const c10::Dict<std::string, torch::Tensor>& dict,
                           const std::vector<CheckpointPart>& parts, const std::string& where) {
  torch::NoGradGuard no_grad;
  for (const auto& part : parts)
    for (size_t i = 0; i < part.tensors.size(); ++i) {
      const auto key = part.prefix + std::to_string(i);
      if (!dict.contains(key))
        FASTER_THROW(where, ": missing '", key, "' (saved with other options?)");
      const auto src = dict.at(key);
      auto dst = part.tensors[i];
      if (src.sizes() != dst.sizes())
        FASTER_THROW(where, ": '", key, "' has shape ", src.sizes(), ", expected ", dst.sizes(),
                     " (saved with other options? e.g. --freeze-whitening)");
      dst.copy_(src);
    }
}

}  // namespace faster::train
