// LMDB dataset reader.
#include "faster/data/sources/lmdb_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace faster::data {
namespace fmt = lmdb_format;

LmdbSource::LmdbSource(const std::filesystem::path& path)
    : env_(LmdbEnv::open_read_only(path)), txn_(std::make_unique<LmdbTxn>(env_, true)) {
  MDB_val value;
  if (!txn_->find(fmt::kMetaKey, value))
    throw Error(detail::concat(env_.path(), ": no metadata record (key '", fmt::kMetaKey,
                               "'): not a database written by 'faster pack', or an unfinished one"),
                "pack it again with 'faster pack --src DIR --out DB'");
  meta_ = fmt::decode_metadata(to_view(value), env_.path());
  index_records();
  if (size() == 0) FASTER_THROW(env_.path(), ": the database holds no images");
}

LmdbSource::~LmdbSource() = default;

// Walks the keys in order (records sort by index, then the metadata), so a missing, extra or
// foreign key is found at open time rather than as a crash mid-epoch.
void LmdbSource::index_records() {
  records_.reserve(static_cast<size_t>(meta_.count));
  LmdbCursor cursor(*txn_, env_.path());
  MDB_val key, value;
  for (bool ok = cursor.get(key, value, MDB_FIRST); ok; ok = cursor.get(key, value, MDB_NEXT)) {
    const auto index = fmt::parse_record_key(to_view(key));
    if (!index) {
      if (to_view(key) == fmt::kMetaKey) continue;
      FASTER_THROW(env_.path(), ": unexpected key '", to_view(key), "' (not a record key)");
    }
    if (*index != size())
      FASTER_THROW(env_.path(), ": record key '", fmt::record_key(size()).view(),
                   "' is missing (found '", to_view(key), "' next)");
    if (value.mv_size < fmt::kRecordHeaderBytes)
      FASTER_THROW(env_.path(), " key '", to_view(key), "': record too short (", value.mv_size,
                   " bytes)");
    records_.push_back(value);
  }
  if (size() != meta_.count)
    FASTER_THROW(env_.path(), ": metadata says ", meta_.count, " records, the database holds ",
                 size());
}

fmt::RecordView LmdbSource::view(int64_t index) const {
  FASTER_CHECK(index >= 0 && index < size(), env_.path(), ": record ", index, " out of range");
  const MDB_val& v = records_[static_cast<size_t>(index)];
  return *fmt::read_record(v.mv_data, v.mv_size);  // length checked in index_records()
}

void LmdbSource::get(int64_t index, Sample& out) const {
  const fmt::RecordView r = view(index);
  // Labels index the classes downstream (a CUDA loss asserts on one out of range): damage inside
  // a record, which the page checks do not look at, stops here as a bad image.
  if (r.label < 0 || r.label >= static_cast<int>(meta_.classes.size()))
    FASTER_THROW(name(index), ": label ", r.label, " is not one of the ", meta_.classes.size(),
                 " classes (a damaged record: 'faster pack --verify' lists them)");
  resize_bytes(out.bytes, r.size);
  std::memcpy(out.bytes.data(), r.data, r.size);
  out.label = r.label;
}

int LmdbSource::label(int64_t index) const {
  return view(index).label;
}

std::string LmdbSource::name(int64_t index) const {
  return detail::concat(env_.path(), " key ", fmt::record_key(index).view());
}

std::string LmdbSource::describe() const {
  return detail::concat("lmdb ", env_.path(), " (", meta_.classes.size(), " classes, ", size(),
                        " images)");
}

// Pages this process has mapped are not dropped by fadvise alone, so the mapping lets go of them
// first (MADV_DONTNEED on a read-only shared map only discards the page-table entries).  LMDB does
// not say where its map is (mdb_env_info's me_mapaddr is the meta's fixed-map hint, null here),
// so the span of the records is released: it covers their pages and the leaves between them.
int64_t LmdbSource::evict_page_cache() const {
  if (!records_.empty()) {
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (const MDB_val& v : records_) {
      lo = std::min(lo, reinterpret_cast<uintptr_t>(v.mv_data));
      hi = std::max(hi, reinterpret_cast<uintptr_t>(v.mv_data) + v.mv_size);
    }
    lo &= ~(static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)) - 1);
    ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  }
  mdb_filehandle_t fd;
  if (mdb_env_get_fd(env_.get(), &fd) != MDB_SUCCESS) return 0;
  return posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? 1 : 0;
}

}  // namespace faster::data
