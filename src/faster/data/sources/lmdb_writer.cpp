// LMDB layout writer.
#include "faster/data/sources/lmdb_writer.h"

#include <algorithm>

#include "faster/core/log.h"

namespace faster::data {
namespace fmt = lmdb_format;

LmdbWriter::LmdbWriter(const std::filesystem::path& dir, size_t map_size, size_t batch_bytes)
    : env_(LmdbEnv::create(dir, map_size)), batch_limit_(batch_bytes) {}

void LmdbWriter::append(int label, uint32_t crc, std::vector<uint8_t>&& image) {
  batch_bytes_ += image.size();
  batch_.push_back({label, crc, std::move(image)});
  if (batch_bytes_ >= batch_limit_) flush(nullptr);
}

void LmdbWriter::finish(const fmt::Metadata& metadata) {
  const std::string encoded = fmt::encode_metadata(metadata);
  flush(&encoded);
  env_.sync();
  env_.close();
}

std::vector<uint8_t> LmdbWriter::take_spare() {
  if (spares_.empty()) return {};
  std::vector<uint8_t> v = std::move(spares_.back());
  spares_.pop_back();
  return v;
}

void LmdbWriter::flush(const std::string* metadata) {
  while (write_batch(metadata) == MDB_MAP_FULL) {
    env_.set_map_size(env_.map_size() * 2);
    ++growths_;
    log::debug(env_.path(), ": map full, grown to ", env_.map_size() >> 20, " MiB");
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
