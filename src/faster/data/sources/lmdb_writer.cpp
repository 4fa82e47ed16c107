// LMDB layout writer.
#include "faster/data/sources/lmdb_writer.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>

#include "faster/core/log.h"

namespace faster::data {
namespace fs = std::filesystem;
namespace fmt = lmdb_format;

namespace {

// LMDB reports a write that did not fit as EIO ("short write"), losing ENOSPC.  Called in a catch
// block: says what filled up and where (the file system's free space, or the process's file size
// limit), or rethrows the error as it was.  `wanted`: the bytes being written.
[[noreturn]] void explain_write_error(const LmdbError& e, const fs::path& dir, uint64_t wanted) {
  const int code = e.code();
  if (code != EIO && code != ENOSPC && code != EFBIG && code != EDQUOT) throw;
  const std::string file = (dir / "data.mdb").string();
  struct stat st;
  const uint64_t size = ::stat(file.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  struct rlimit limit {};
  const bool limited = ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  if (limited && (code == EFBIG || size + wanted > limit.rlim_cur))
    throw LmdbError(code,
                    detail::concat("cannot write ", file, ": the file size limit (ulimit -f) of ",
                                   limit.rlim_cur, " bytes is reached"),
                    "raise the limit ('ulimit -f unlimited') and pack again");
  if (code == EDQUOT || code == EFBIG)
    throw LmdbError(code,
                    detail::concat("cannot write ", file, ": ",
                                   code == EDQUOT ? "disk quota exceeded"
                                                  : "file too large for its file system"),
                    "free some space, or choose an --out on another file system");
  struct statvfs fs_stat;
  const fs::path where = fs::absolute(dir).parent_path();
  const bool known = ::statvfs(where.c_str(), &fs_stat) == 0;
  const uint64_t free_bytes = known ? uint64_t{fs_stat.f_bavail} * fs_stat.f_frsize : 0;
  // EIO with room to spare is a real I/O error: reported as LMDB said it.
  if (code == EIO && (!known || free_bytes >= wanted + (uint64_t{1} << 20))) throw;
  throw LmdbError(code,
                  detail::concat("cannot write ", file, ": no space left on the device (",
                                 free_bytes >> 10, " KiB free on the file system of ",
                                 where.string(), ", ", wanted >> 10, " KiB to write)"),
                  "free some space, or choose an --out on another file system");
}

LmdbEnv create_env(const fs::path& dir, size_t map_size) {
  try {
    return LmdbEnv::create(dir, map_size);
  } catch (const LmdbError& e) {
    explain_write_error(e, dir, 0);  // the two meta pages
  }
}

}  // namespace

LmdbWriter::LmdbWriter(const fs::path& dir, size_t map_size, size_t batch_bytes)
    : env_(create_env(dir, map_size)), batch_limit_(batch_bytes) {}

void LmdbWriter::append(int label, uint32_t crc, std::vector<uint8_t>&& image) {
  batch_bytes_ += image.size();
  batch_.push_back({label, crc, std::move(image)});
  if (batch_bytes_ >= batch_limit_) flush(nullptr);
}

void LmdbWriter::finish(const fmt::Metadata& metadata) {
  const std::string encoded = fmt::encode_metadata(metadata);
  flush(&encoded);
  try {
    env_.sync();
  } catch (const LmdbError& e) {
    explain_write_error(e, env_.path(), 0);
  }
  env_.close();
}

std::vector<uint8_t> LmdbWriter::take_spare() {
  if (spares_.empty()) return {};
  std::vector<uint8_t> v = std::move(spares_.back());
  spares_.pop_back();
  return v;
}

void LmdbWriter::flush(const std::string* metadata) {
  try {
    while (write_batch(metadata) == MDB_MAP_FULL) {
      env_.set_map_size(env_.map_size() * 2);
      ++growths_;
      log::debug(env_.path(), ": map full, grown to ", env_.map_size() >> 20, " MiB");
    }
  } catch (const LmdbError& e) {
    explain_write_error(e, env_.path(), batch_bytes_ + (metadata ? metadata->size() : 0));
  }
  committed_ += static_cast<int64_t>(batch_.size());
  for (auto& p : batch_) spares_.push_back(std::move(p.image));
  batch_.clear();
  batch_bytes_ = 0;
}

// MDB_SUCCESS, or MDB_MAP_FULL with nothing written (the transaction is aborted).
int LmdbWriter::write_batch(const std::string* metadata) {
  LmdbTxn txn(env_, false);
  for (size_t i = 0; i < batch_.size(); ++i) {
    const auto key = fmt::record_key(committed_ + static_cast<int64_t>(i));
    const Pending& p = batch_[i];
    MDB_val k{key.view().size(), const_cast<char*>(key.text)};
    MDB_val v{fmt::kRecordHeaderBytes + p.image.size(), nullptr};
    // RESERVE: LMDB hands out the space and the record is written once, straight into the map.
    const int rc = mdb_put(txn.get(), txn.dbi(), &k, &v, MDB_APPEND | MDB_RESERVE);
    if (rc == MDB_MAP_FULL) return rc;
    FASTER_CHECK_LMDB(rc, env_.path(), " key '", key.view(), "'");
    auto* out = static_cast<uint8_t*>(v.mv_data);
    fmt::write_record_header(p.label, p.crc, out);
    std::copy(p.image.begin(), p.image.end(), out + fmt::kRecordHeaderBytes);
  }
  if (metadata) {
    MDB_val k{fmt::kMetaKey.size(), const_cast<char*>(fmt::kMetaKey.data())};
    MDB_val v{metadata->size(), const_cast<char*>(metadata->data())};
    const int rc = mdb_put(txn.get(), txn.dbi(), &k, &v, MDB_APPEND);
    if (rc == MDB_MAP_FULL) return rc;
    FASTER_CHECK_LMDB(rc, env_.path(), " key '", fmt::kMetaKey, "'");
  }
  try {
    txn.commit();
  } catch (const LmdbError& e) {
    if (e.code() == MDB_MAP_FULL) return MDB_MAP_FULL;
    throw;
  }
  return MDB_SUCCESS;
}

}  // namespace faster::data
