// The registry's table: one row per architecture.
#include "faster/models/registry.h"

#include <functional>

#include "faster/core/error.h"
#include "faster/models/thinnet.h"

namespace faster::models {
namespace {

ThinNetOptions thinnet_options(const ModelOptions& o) {
  ThinNetOptions t;
  t.in_channels = o.in_channels;
  t.classes = o.classes;
  t.filters = o.filters;
  t.blocks = o.blocks;
  t.norm = o.norm;
  t.sync_all_reduce = o.sync_all_reduce;
  t.fused = o.fused;
  return t;
}

struct Entry {
  const char* name;
  std::function<Model(const ModelOptions&)> make;
  std::function<int(const ModelOptions&)> min_input_size;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {"thinnet",
       [](const ModelOptions& o) { return Model(ThinNet(thinnet_options(o)).ptr(), "thinnet"); },
       [](const ModelOptions& o) { return thinnet_options(o).min_input_size(); }},
  };
  return entries;
}

const Entry& find(const std::string& name) {
  for (const auto& e : registry())
    if (name == e.name) return e;
  std::string names;
  for (const auto& n : model_names()) names += (names.empty() ? "" : ", ") + n;
  FASTER_THROW("--model '", name, "' is not a model faster knows (", names, ")");
}

}  // namespace

Model make_model(const ModelOptions& options) {
  return find(options.name).make(options);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.push_back(e.name);
  return names;
}

int min_input_size(const ModelOptions& options) {
  return find(options.name).min_input_size(options);
}

}  // namespace faster::models
