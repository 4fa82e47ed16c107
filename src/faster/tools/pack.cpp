// `faster pack` implementation.  The folder is read through the loader's own FolderSource, so the
// records are by construction the samples `faster load` sees in the folder, in its order and with
// its labels.  Workers read, check and (optionally) downscale images in any order into a reorder
// ring; one writer (data::LmdbWriter) takes them in index order, so the database order never
// depends on thread timing.
#include "faster/tools/pack.h"

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "faster/core/error.h"
#include "faster/core/interrupt.h"
#include "faster/core/log.h"
#include "faster/core/parallel.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/sources/folder_source.h"
#include "faster/data/sources/lmdb_format.h"
#include "faster/data/sources/lmdb_writer.h"
#include "faster/tools/downscale.h"
#include "faster/tools/file_io.h"
#include "faster/tools/tree.h"

namespace faster::tools {
namespace fs = std::filesystem;
namespace fmt = data::lmdb_format;

namespace {

// Address space, not disk: LMDB's file grows with the data.  Doubled whenever it fills.
constexpr size_t kInitialMapSize = size_t{1} << 30;

// One image on its way from a worker to the writer.
struct Slot {
  enum class State { kFree, kGood, kBad };
  State state = State::kFree;
  int label = -1;
  uint32_t crc = 0;
  bool downscaled = false;
  int64_t bytes_in = 0;
  std::vector<uint8_t> bytes;
  std::string reason;
};

// Workers fill slot i % size in any order; the writer consumes indices in order and frees them.
class ReorderRing {
 public:
  explicit ReorderRing(size_t size) : slots_(size) {}

  // Worker side: waits until the slot for index i is free; nullptr once cancelled.
  Slot* acquire(int64_t i) {
    std::unique_lock<std::mutex> lock(mutex_);
    freed_.wait(lock, [&] { return cancelled_ || i < consumed_ + size(); });
    return cancelled_ ? nullptr : &slot(i);
  }
  void publish(int64_t i, Slot::State state) {
    std::lock_guard<std::mutex> lock(mutex_);
    slot(i).state = state;
    filled_.notify_all();
  }
  // Writer side: waits until index i is published; nullptr once cancelled.
  Slot* wait(int64_t i) {
    std::unique_lock<std::mutex> lock(mutex_);
    filled_.wait(lock, [&] { return cancelled_ || slot(i).state != Slot::State::kFree; });
    return cancelled_ ? nullptr : &slot(i);
  }
  void release(int64_t i) {
    std::lock_guard<std::mutex> lock(mutex_);
    slot(i).state = Slot::State::kFree;
    consumed_ = i + 1;
    freed_.notify_all();
  }
  void cancel() {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    filled_.notify_all();
    freed_.notify_all();
  }

 private:
  int64_t size() const { return static_cast<int64_t>(slots_.size()); }
  Slot& slot(int64_t i) { return slots_[static_cast<size_t>(i % size())]; }

  std::mutex mutex_;
  std::condition_variable filled_, freed_;
  std::vector<Slot> slots_;
  int64_t consumed_ = 0;
  bool cancelled_ = false;
};

struct Worker {
  Downscaler downscaler;
  data::Sample in;
  std::vector<uint8_t> out;
};

// Reads, checks and maybe downscales image i into its slot; returns the slot's new state.
Slot::State load_one(const PackOptions& o, const data::Source& source, int64_t i, Worker& w,
                     Slot& s) {
  DownscaleResult result;
  try {
    source.get(i, w.in);
    data::JpegEncodeOptions encode;
    encode.quality = o.quality;
    result = w.downscaler.run(w.in.bytes.data(), w.in.bytes.size(), o.max_size, encode, w.out);
  } catch (const Error& e) {
    s.reason = e.what();
    return Slot::State::kBad;
  }
  s.label = w.in.label;
  std::vector<uint8_t>& image = result == DownscaleResult::kKeep ? w.in.bytes : w.out;
  s.downscaled = result == DownscaleResult::kDownscaled;
  s.bytes_in = static_cast<int64_t>(w.in.bytes.size());
  s.crc = fmt::crc32(image.data(), image.size());
  std::swap(s.bytes, image);  // hand the buffer over; the worker keeps the slot's old one
  return Slot::State::kGood;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void validate(const PackOptions& o) {
  check_range("--max-size", o.max_size, 0, kMaxJpegSide);  // 0: stored as they are
  check_range("--quality", o.quality, 1, 100);
  check_workers(o.workers);
  std::error_code ec;
  if (!fs::is_directory(o.src, ec)) FASTER_THROW("--src is not a directory: ", o.src.string());
  if (fs::exists(fs::symlink_status(o.out, ec)))
    throw Error(detail::concat("--out ", o.out.string(), " already exists"),
                "remove it or choose another name: pack never overwrites a database");
  check_separate_trees(o.src, o.out, "--out");
  check_output_dir(o.out, "--out");  // its temporary is made beside it, with its parents
}

// Removes the temporary database unless the pack got as far as renaming it.
class TempDbGuard {
 public:
  explicit TempDbGuard(fs::path dir) : dir_(std::move(dir)) {}
  ~TempDbGuard() {
    if (!dir_.empty()) remove_tree(dir_);
  }
  void release() { dir_.clear(); }

 private:
  fs::path dir_;
};

// Runs the workers on a thread of their own while the caller writes; cancels them on unwind.
class Producer {
 public:
  template <typename Fn>
  Producer(ReorderRing& ring, int workers, int64_t n, Fn fn) : ring_(ring) {
    thread_ = std::thread([this, workers, n, fn] {
      try {
        parallel_for(workers, n, fn);
      } catch (...) {
        error_ = std::current_exception();
        ring_.cancel();
      }
    });
  }
  ~Producer() {
    if (thread_.joinable()) {
      ring_.cancel();
      thread_.join();
    }
  }
  // Joins; rethrows a worker's error.
  void join() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  ReorderRing& ring_;
  std::thread thread_;
  std::exception_ptr error_;
};

fmt::Metadata make_metadata(const PackOptions& o, const data::Source& source,
                            const PackSummary& s) {
  fmt::Metadata m;
  m.count = s.packed;
  m.classes = source.classes();
  m.source = fs::absolute(o.src).lexically_normal().string();
  m.options = {{"max_size", o.max_size}};
  if (o.max_size > 0) m.options["quality"] = o.quality;
  m.image_bytes = s.bytes_out;
  m.created = utc_now();
  m.writer = std::string("faster ") + FASTER_VERSION;
  for (const auto& b : s.bad_images) m.skipped.push_back({{"path", b.path}, {"reason", b.reason}});
  m.class_counts = s.class_counts;
  return m;
}

// A sample's path below the packed folder, for reports.
std::string relative_name(const data::FolderSource& source, int64_t i) {
  return fs::path(source.name(i)).lexically_relative(source.root()).string();
}

// The writer loop: records in folder order into the database, bad images into the summary.
void write_all(const PackOptions& o, const data::FolderSource& source, int workers,
               data::LmdbWriter& writer, PackSummary& s) {
  const int64_t n = source.size();
  ReorderRing ring(static_cast<size_t>(std::max(16, 4 * workers)));
  std::vector<Worker> state(static_cast<size_t>(workers));
  Producer producer(ring, workers, n, [&](int w, int64_t i) {
    Slot* slot = ring.acquire(i);
    if (slot) ring.publish(i, load_one(o, source, i, state[static_cast<size_t>(w)], *slot));
  });
  std::optional<Progress> progress;
  if (o.progress) progress.emplace("pack", n, "img");
  s.class_counts.assign(source.classes().size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    // Ctrl-C: the temporary database goes (TempDbGuard); a database is never left half-packed.
    stop_if_interrupted(
        [&] {
          return detail::concat("after ", i, " of ", n, " images: nothing written to ",
                                o.out.string());
        },
        "pack starts over when run again");
    Slot* slot = ring.wait(i);
    if (!slot) break;  // a worker failed: join() below rethrows its error
    if (slot->state == Slot::State::kBad) {
      const std::string name = relative_name(source, i);
      if (s.bad_images.size() < 10) log::warn("bad image ", name, ": ", slot->reason);
      s.bad_images.push_back({name, slot->reason});
    } else {
      s.bytes_in += slot->bytes_in;
      s.bytes_out += static_cast<int64_t>(slot->bytes.size());
      s.downscaled += slot->downscaled;
      ++s.class_counts[static_cast<size_t>(slot->label)];
      writer.append(slot->label, slot->crc, std::move(slot->bytes));
      slot->bytes = writer.take_spare();
    }
    ring.release(i);
    if (progress) progress->add();
  }
  producer.join();
}

}  // namespace

PackSummary pack_folder(const PackOptions& o) {
  validate(o);
  Timer timer;
  const data::FolderSource source(o.src);
  const fs::path temp = temp_path_for(fs::absolute(o.out).lexically_normal());
  std::error_code ec;
  if (fs::exists(temp, ec)) {
    DirectoryLock probe(temp, "'faster pack'");  // refuses if a live pack is still writing it
    log::info("removing ", temp.string(), ", left by an interrupted pack");
    remove_tree(temp);
  }
  InterruptScope interrupt;  // before the guard: its handlers stay until the guard has cleaned up
  TempDbGuard guard(temp);
  data::LmdbWriter writer(temp, o.initial_map_size > 0 ? o.initial_map_size : kInitialMapSize);
  DirectoryLock lock(temp, "'faster pack'");

  PackSummary s;
  s.files = source.size();
  s.classes = static_cast<int64_t>(source.classes().size());
  const int workers = worker_count(o.workers, s.files);
  write_all(o, source, workers, writer, s);
  // Entries named like images that are not files were never opened (FolderSource warned).
  for (const auto& entry : source.not_files())
    s.bad_images.push_back({entry.path, "not a regular file (" + entry.kind + ")"});
  s.files += static_cast<int64_t>(source.not_files().size());
  s.bad = static_cast<int64_t>(s.bad_images.size());
  s.packed = s.files - s.bad;
  if (s.packed == 0)  // a database of no images would only fail later, in whatever reads it
    throw Error(detail::concat("every image of ", o.src.string(), " is bad (", s.bad,
                               "): nothing packed, no database written"),
                "is this a JPEG dataset? the warnings above say what is wrong with each");
  writer.finish(make_metadata(o, source, s));
  s.map_growths = writer.growths();
  // Readers open without a lock file (the database is immutable from here on).
  fs::remove(temp / "lock.mdb", ec);
  if (::rename(temp.c_str(), o.out.c_str()) != 0)
    FASTER_THROW("cannot rename ", temp.string(), " to ", o.out.string(), ": ", errno_text(errno));
  guard.release();
  sync_directory(fs::absolute(o.out).lexically_normal().parent_path());
  s.seconds = timer.seconds();
  return s;
}

std::string format_summary(const PackSummary& s, const fs::path& out) {
  char line[512];
  std::snprintf(line, sizeof line,
                "pack: %lld images, %lld classes into %s in %s (%s img/s): %lld packed "
                "(%lld downscaled), %lld bad (left out)\n"
                "      %.1f MB read, %.1f MB stored; map grown %d times\n",
                static_cast<long long>(s.files), static_cast<long long>(s.classes),
                out.string().c_str(), format_duration(s.seconds).c_str(),
                format_count(s.seconds > 0 ? s.files / s.seconds : 0).c_str(),
                static_cast<long long>(s.packed), static_cast<long long>(s.downscaled),
                static_cast<long long>(s.bad), s.bytes_in / 1e6, s.bytes_out / 1e6, s.map_growths);
  return line;
}

}  // namespace faster::tools
