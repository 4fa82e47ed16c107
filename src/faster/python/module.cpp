// `import faster`'s native part, faster._faster: the loader (loader.h) bound with pybind11, its
// tensors handed to Python as torch.Tensor (the same storage), faster's errors as Python's
// exceptions.  The keywords are read here into a LoaderRequest; their defaults and ranges are the
// C++ options' (train/data_options.h, loader.h): options() lists each keyword with its default,
// read from a default request, for the Python class's documentation.
#include <torch/extension.h>

#include <regex>
#include <string>

#include "faster/core/error.h"
#include "faster/python/loader.h"

namespace py = pybind11;

namespace faster::python {
namespace {

// A signal (Ctrl-C) Python noted while the loader waited: raised once the GIL is back.
struct SignalPending {};

// A keyword of ImageLoader: its help, its value in a request, and how a Python value sets it.
struct Keyword {
  const char* name;
  const char* help;
  std::function<py::object(const LoaderRequest&)> get;
  std::function<void(LoaderRequest&, py::handle)> set;
};

template <typename T>
T as(py::handle value, const char* name, const char* kind) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(name) + " must be " + kind + " (got " +
                         std::string(py::str(value.get_type().attr("__name__"))) + ")");
  }
}

template <typename E, size_t N>
E enum_value(py::handle value, const char* name, const EnumName<E> (&table)[N]) {
  return parse_enum(table, as<std::string>(value, name, "a string"), std::string("--") + name);
}

std::pair<double, double> pair_of(py::handle value, const char* name) {
  const auto v = as<std::vector<double>>(value, name, "a pair of numbers");
  if (v.size() != 2) throw py::value_error(std::string(name) + " must be a pair (low, high)");
  return {v[0], v[1]};
}

void three(py::handle value, const char* name, float (&out)[3]) {
  const auto v = as<std::vector<float>>(value, name, "three numbers");
  if (v.size() != 3) throw py::value_error(std::string(name) + " must hold three numbers (RGB)");
  std::copy(v.begin(), v.end(), out);
}

constexpr EnumName<torch::ScalarType> kDtypes[] = {
    {"float32", torch::kFloat32}, {"float16", torch::kFloat16}, {"bfloat16", torch::kBFloat16}};
constexpr EnumName<int> kLastBatch[] = {{"keep", 0}, {"drop", 1}, {"pad", 2}};

const std::vector<Keyword>& keywords() {
  using R = LoaderRequest;
  static const std::vector<Keyword> k = {
      {"res", "output side: train's random-resized crop, val's centre crop (0: 224)",
       [](const R& r) { return py::cast(r.data.res.res); },
       [](R& r, py::handle v) { r.data.res.res = as<int>(v, "res", "an int"); }},
      {"val_resize", "val: the shorter side resized to this first (0: res * 256 / 224)",
       [](const R& r) { return py::cast(r.data.val_resize); },
       [](R& r, py::handle v) { r.data.val_resize = as<int>(v, "val_resize", "an int"); }},
      {"max_res", "the largest side set_res may ask for (0: res); the ring is sized for it",
       [](const R& r) { return py::cast(r.max_res); },
       [](R& r, py::handle v) { r.max_res = as<int>(v, "max_res", "an int"); }},
      {"crop_scale", "train: RandomResizedCrop's scale, of the image's area",
       [](const R& r) { return py::make_tuple(r.data.crop_scale_min, r.data.crop_scale_max); },
       [](R& r, py::handle v) {
         std::tie(r.data.crop_scale_min, r.data.crop_scale_max) = pair_of(v, "crop_scale");
       }},
      {"crop_ratio", "train: RandomResizedCrop's ratio, width to height",
       [](const R& r) { return py::make_tuple(r.data.crop_ratio_min, r.data.crop_ratio_max); },
       [](R& r, py::handle v) {
         std::tie(r.data.crop_ratio_min, r.data.crop_ratio_max) = pair_of(v, "crop_ratio");
       }},
      {"flip", "train: mirror half the crops (RandomHorizontalFlip)",
       [](const R& r) { return py::cast(r.flip); },
       [](R& r, py::handle v) { r.flip = as<bool>(v, "flip", "a bool"); }},
      {"auto_augment",
       "train: torchvision's policy after each crop and flip, 'ta_wide' (TrivialAugmentWide), "
       "'ra' (RandAugment), 'imagenet' (AutoAugment's), 'augmix' (AugMix) or 'none', on the CPU "
       "threads",
       [](const R& r) {
         return py::cast(enum_name(data::kAutoAugmentNames, r.data.auto_augment.policy));
       },
       [](R& r, py::handle v) {
         r.data.auto_augment.policy = enum_value(v, "auto_augment", data::kAutoAugmentNames);
       }},
      {"ra_magnitude", "RandAugment's strength, a bin of 31 (0-30)",
       [](const R& r) { return py::cast(r.data.auto_augment.ra_magnitude); },
       [](R& r, py::handle v) {
         r.data.auto_augment.ra_magnitude = as<int>(v, "ra_magnitude", "an int");
       }},
      {"augmix_severity", "AugMix's strength, the first N of 10 bins (1-10)",
       [](const R& r) { return py::cast(r.data.auto_augment.augmix_severity); },
       [](R& r, py::handle v) {
         r.data.auto_augment.augmix_severity = as<int>(v, "augmix_severity", "an int");
       }},
      {"ra_reps",
       "train: torchvision's repeated-augmentation sampler (RASampler), each image this many "
       "times in a row in other crops, dealt to the ranks in turn; floor(N / 256) * 256 images "
       "an epoch (0: off)",
       [](const R& r) { return py::cast(r.data.ra_reps); },
       [](R& r, py::handle v) { r.data.ra_reps = as<int>(v, "ra_reps", "an int"); }},
      {"decode",
       "'cpu' (libjpeg-turbo in the loader threads), 'nvjpeg' (the GPU's JPEG engines) or "
       "'auto' (nvjpeg on a GPU unless the images are small)",
       [](const R& r) { return py::cast(enum_name(train::kDecodeChoices, r.data.decode)); },
       [](R& r, py::handle v) { r.data.decode = enum_value(v, "decode", train::kDecodeChoices); }},
      {"workers", "loader threads (0: all cores)",
       [](const R& r) { return py::cast(r.data.workers); },
       [](R& r, py::handle v) { r.data.workers = as<int>(v, "workers", "an int"); }},
      {"cpu_share",
       "nvjpeg: the share of images the CPU threads decode anyway, a number in 0..1 or 'auto' "
       "(adapted as the loader runs)",
       [](const R& r) { return py::cast(data::to_string(r.data.cpu_share)); },
       [](R& r, py::handle v) {
         r.data.cpu_share = py::isinstance<py::str>(v)
                                ? data::parse_cpu_share(v.cast<std::string>())
                                : data::CpuShare{as<double>(v, "cpu_share", "a number"), false};
       }},
      {"nvjpeg_threads", "nvjpeg: threads feeding the GPU's decoder",
       [](const R& r) { return py::cast(r.data.nvjpeg_threads); },
       [](R& r, py::handle v) { r.data.nvjpeg_threads = as<int>(v, "nvjpeg_threads", "an int"); }},
      {"normalize", "(x / 255 - mean) / std as dtype; False: uint8 pixels",
       [](const R& r) { return py::cast(r.normalize); },
       [](R& r, py::handle v) { r.normalize = as<bool>(v, "normalize", "a bool"); }},
      {"mean", "per channel, of values in [0, 1] (ImageNet's)",
       [](const R& r) { return py::make_tuple(r.norm.mean[0], r.norm.mean[1], r.norm.mean[2]); },
       [](R& r, py::handle v) { three(v, "mean", r.norm.mean); }},
      {"std", "per channel (ImageNet's)",
       [](const R& r) { return py::make_tuple(r.norm.std[0], r.norm.std[1], r.norm.std[2]); },
       [](R& r, py::handle v) { three(v, "std", r.norm.std); }},
      {"dtype", "normalized images' dtype: 'float32', 'float16' or 'bfloat16' (or torch's)",
       [](const R& r) { return py::cast(enum_name(kDtypes, r.dtype)); },
       [](R& r, py::handle v) { r.dtype = enum_value(v, "dtype", kDtypes); }},
      {"channels_last", "images in channels-last memory ([N, C, H, W] strided as NHWC)",
       [](const R& r) { return py::cast(r.data.channels_last); },
       [](R& r, py::handle v) { r.data.channels_last = as<bool>(v, "channels_last", "a bool"); }},
      {"device", "'auto' (a GPU if one is visible), 'cpu', 'cuda' or 'cuda:N'",
       [](const R& r) { return py::cast(r.device); },
       [](R& r, py::handle v) { r.device = as<std::string>(v, "device", "a string"); }},
      {"seed", "the shuffle's and the crops' seed: (seed, epoch) decides an epoch",
       [](const R& r) { return py::cast(r.data.seed); },
       [](R& r, py::handle v) { r.data.seed = as<uint64_t>(v, "seed", "an int >= 0"); }},
      {"shuffle", "a new order every epoch (None: for train)",
       [](const R& r) { return r.shuffle ? py::cast(*r.shuffle) : py::none(); },
       [](R& r, py::handle v) {
         if (!v.is_none()) r.shuffle = as<bool>(v, "shuffle", "a bool");
       }},
      {"last_batch",
       "the short last batch: 'keep', 'drop' (train), or 'pad' to full size with labels -100 "
       "(ignored by cross_entropy)",
       [](const R& r) {
         return py::cast(r.pad ? "pad" : enum_name(data::kLastBatchNames, r.data.last_batch));
       },
       [](R& r, py::handle v) {
         const int k = enum_value(v, "last_batch", kLastBatch);
         r.pad = k == 2;
         r.data.last_batch = k == 1 ? data::LastBatch::kDrop : data::LastBatch::kKeep;
       }},
      {"drop_last", "DataLoader's name for last_batch='drop'",
       [](const R& r) { return py::cast(r.data.last_batch == data::LastBatch::kDrop); },
       [](R& r, py::handle v) {
         if (as<bool>(v, "drop_last", "a bool")) r.data.last_batch = data::LastBatch::kDrop;
       }},
      {"on_bad_image",
       "a corrupt or unreadable image: 'skip' (replaced by the next one, counted in stats()) or "
       "'fail' (RuntimeError naming it)",
       [](const R& r) { return py::cast(enum_name(data::kBadImageNames, r.data.on_bad_image)); },
       [](R& r, py::handle v) {
         r.data.on_bad_image = enum_value(v, "on_bad_image", data::kBadImageNames);
       }},
      {"rank", "this process's shard (default: torch.distributed's rank, else 0)",
       [](const R& r) { return py::cast(r.rank); },
       [](R& r, py::handle v) { r.rank = as<int>(v, "rank", "an int"); }},
      {"world_size", "shards (default: torch.distributed's world size, else 1)",
       [](const R& r) { return py::cast(r.world); },
       [](R& r, py::handle v) { r.world = as<int>(v, "world_size", "an int"); }},
  };
  return k;
}

LoaderRequest request(const std::string& root, int64_t batch, bool train, const py::dict& given) {
  LoaderRequest r;
  r.root = root;
  r.train = train;
  r.data.batch = batch;
  for (const auto& [key, value] : given) {
    const auto name = key.cast<std::string>();
    const auto& k = keywords();
    const auto it =
        std::find_if(k.begin(), k.end(), [&](const Keyword& w) { return name == w.name; });
    if (it == k.end())
      throw py::type_error("ImageLoader() got an unexpected keyword argument '" + name + "'");
    if (!value.is_none()) it->set(r, value);
  }
  return r;
}

// faster's messages name the command line's flags; Python names its keywords.
std::string python_words(const std::string& text) {
  static const std::regex flag("--([a-z][a-z0-9-]*)");
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), flag);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += text.substr(last, it->position() - last);
    std::string name = (*it)[1];
    std::replace(name.begin(), name.end(), '-', '_');
    out += name == "batch" ? "batch_size" : name;
    last = it->position() + it->length();
  }
  return out + text.substr(last);
}

std::string message(const Error& e) {
  return python_words(e.what()) + (e.hint().empty() ? "" : " (" + python_words(e.hint()) + ")");
}

py::object next_batch(Loader& loader) {
  std::optional<std::pair<torch::Tensor, torch::Tensor>> b;
  bool signalled = false;
  {
    py::gil_scoped_release nogil;
    try {
      b = loader.next([] {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) throw SignalPending{};
      });
    } catch (const SignalPending&) {
      signalled = true;
    }
  }
  if (signalled) throw py::error_already_set();  // KeyboardInterrupt, or what the handler raised
  if (!b) return py::none();
  return py::make_tuple(std::move(b->first), std::move(b->second));
}

py::object json_to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

}  // namespace

}  // namespace faster::python

PYBIND11_MODULE(_faster, m) {
  using namespace faster;
  using namespace faster::python;
  py::module_::import("torch");  // its tensor type, for the tensors handed out
  m.doc() = "faster's native loader; use faster.ImageLoader";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UsageError& e) {
      PyErr_SetString(PyExc_ValueError, message(e).c_str());
    } catch (const NotFoundError& e) {
      PyErr_SetString(PyExc_FileNotFoundError, message(e).c_str());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, message(e).c_str());
    }
  });
  m.def(
      "options",
      [] {
        const LoaderRequest defaults;
        py::list out;
        for (const auto& k : keywords())
          out.append(py::make_tuple(k.name, k.get(defaults), k.help));
        return out;
      },
      "Each ImageLoader keyword: (name, default, help).");
  py::class_<Loader>(m, "Loader")
      .def(py::init([](const std::string& root, int64_t batch, bool train, const py::dict& o) {
             const auto r = request(root, batch, train, o);
             py::gil_scoped_release nogil;  // listing a large tree takes a while
             return std::make_unique<Loader>(r);
           }),
           py::arg("root"), py::arg("batch_size"), py::arg("train"), py::arg("options"))
      .def("start_epoch", &Loader::start_epoch, py::call_guard<py::gil_scoped_release>())
      .def("next", &next_batch)
      .def("indices", &Loader::indices)
      .def("batches_per_epoch", &Loader::batches_per_epoch)
      .def("samples_per_epoch", &Loader::samples_per_epoch)
      .def("set_res", &Loader::set_res)
      .def("classes", &Loader::classes)
      .def("stats", [](const Loader& l) { return json_to_python(l.stats()); })
      .def("describe", [](const Loader& l) { return json_to_python(l.describe()); })
      .def("close", &Loader::close, py::call_guard<py::gil_scoped_release>());
}
