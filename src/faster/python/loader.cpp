// The Python module's loader: the request through faster train's plan into the image loader.
#include "faster/python/loader.h"

#include <unistd.h>

#include <algorithm>

#include "faster/core/error.h"
#include "faster/data/loader/load_benchmark.h"
#include "faster/train/options.h"

namespace faster::python {

class Loader::Busy {
 public:
  explicit Busy(const Loader& l) : busy_(l.busy_) {
    if (busy_.exchange(true))
      throw Error("this faster.ImageLoader is in use by another call (one thread at a time)");
  }
  ~Busy() { busy_ = false; }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  std::atomic<bool>& busy_;
};

Loader::Loader(const LoaderRequest& r) : request_(r), owner_(getpid()) {
  train::DataOptions o = r.data;
  o.flip = r.train && r.flip ? train::Flip::kOn : train::Flip::kOff;
  train::validate(o);  // res as given: its message names res
  check_range("--world-size", r.world, 1, 1 << 20);
  check_range("--rank", r.rank, 0, r.world - 1);
  // Python's res is the output side either way: train's crop, val's centre crop.
  if (!r.train) o.val_res = o.res.res, o.res.res = 0;
  device_ = train::resolve_device(r.device);
  if (device_.is_cpu() && o.decode == train::Decode::kNvjpeg)
    train::refuse_on_cpu(r.device, "--decode nvjpeg", "--decode cpu decodes on the CPU");
  data_ = train::open_one_split(r.root, r.train, &note_);
  train::WorldInfo w;
  w.rank = r.rank, w.world = r.world;
  plan_ = train::plan_data(o, data_, 0, device_, w);
  const int side = r.train ? plan_.options.res.res : plan_.val_res;  // as the data settled it
  if (r.max_res != 0) check_range("--max-res", r.max_res, side, data::kMaxSide);
  auto lo = train::loader_options(plan_, data_, device_, w, r.train);
  lo.sampler.shuffle = r.shuffle.value_or(r.train);
  lo.last_batch = r.pad ? data::LastBatch::kPad : plan_.options.last_batch;  // val's too
  if (r.max_res > 0) lo.max_size = r.max_res;
  lo.norm = r.norm;
  lo.dtype = r.dtype;
  // Normalized batches: on a GPU the uint8 batch is normalized there (nvJPEG's on the GPU
  // anyway); on the CPU the workers write normalized float32 straight into the ring.
  lo.normalize_on_device = r.normalize;
  lo.output = r.normalize && (device_.is_cpu() || lo.decode == data::DecodeOn::kNvjpeg)
                  ? data::OutputType::kFloat
                  : data::OutputType::kUint8;
  permute_ = lo.layout == data::Layout::kNHWC;
  loader_ = std::make_unique<data::ImageLoader>(r.train ? data_.train : data_.val, lo);
}

Loader::~Loader() {
  // A forked child holds a copy of the parent's memory but none of its threads: stopping them
  // would wait on threads that are not there.  The copy is left unreleased instead.
  if (getpid() != owner_) static_cast<void>(loader_.release());
}

void Loader::check_usable() const {
  if (getpid() != owner_)
    throw Error(
        "this faster.ImageLoader was made in another process (a fork): its threads are not here",
        "make a loader in each process that iterates one");
  if (!loader_) throw Error("this faster.ImageLoader is closed");
}

int64_t Loader::batches_per_epoch() const {
  check_usable();
  return loader_->batches_per_epoch();
}

int64_t Loader::samples_per_epoch() const {
  check_usable();
  return loader_->samples_per_epoch();
}

void Loader::start_epoch(int64_t epoch) {
  const Busy busy(*this);
  check_usable();
  check_at_least("--epoch", epoch, int64_t{0});
  loader_->start_epoch(epoch);
}

std::optional<std::pair<torch::Tensor, torch::Tensor>> Loader::next(
    const std::function<void()>& check) {
  const Busy busy(*this);
  check_usable();
  struct Reset {  // the check is the caller's, this call's only
    data::ImageLoader& l;
    ~Reset() { l.set_wait_check({}); }
  } reset{*loader_};
  loader_->set_wait_check(check);
  auto b = loader_->next();
  if (!b) return std::nullopt;
  indices_ = std::move(b->indices);
  auto images = permute_ ? b->images.permute({0, 3, 1, 2}) : b->images;
  // CPU batches of another dtype than the workers' float32 (GPU ones are normalized as asked).
  if (request_.normalize && images.scalar_type() != request_.dtype)
    images = images.to(request_.dtype);
  return std::make_pair(std::move(images), std::move(b->labels));
}

void Loader::set_res(int res) {
  const Busy busy(*this);
  check_usable();
  if (!request_.train)
    throw UsageError("set_res sets the training crop's side; a validation loader's is its res");
  check_range("--res", res, 8, loader_->options().max_size);
  loader_->set_size(res);
}

nlohmann::json Loader::stats() const {
  const Busy busy(*this);
  check_usable();
  const auto r = data::loader_report(*loader_);
  auto j = data::to_json(r);
  j["source"] = (request_.train ? data_.train : data_.val)->describe();
  for (const char* key :
       {"seconds", "images_per_s", "mb_per_s", "batches", "cache", "decode_floor"})
    j.erase(key);
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& row : r.stage_rows())
    stages[row.name] = {{"ms_per_image", row.ms_per_image}, {"images_per_s", row.rate}};
  j["stage_rates"] = stages;
  j["wait_s"] = r.stats.wait_s;
  return j;
}

nlohmann::json Loader::describe() const {
  const auto& o = plan_.options;
  return {{"root", request_.root},
          {"split", note_},
          {"train", request_.train},
          {"device", device_.str()},
          {"decode", enum_name(data::kDecodeNames, plan_.decode)},
          {"batch", o.batch},
          {"workers", o.workers},
          {"res", request_.train ? o.res.res : plan_.val_res},
          {"val_resize", plan_.val_resize},
          {"flip", o.flip == train::Flip::kOn},
          {"channels_last", o.channels_last},
          {"classes", data_.classes.size()},
          {"images", (request_.train ? data_.train : data_.val)->size()}};
}

void Loader::close() {
  if (getpid() != owner_) return;
  const Busy busy(*this);
  loader_.reset();
}

}  // namespace faster::python
