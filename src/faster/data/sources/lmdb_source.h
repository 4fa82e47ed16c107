// A dataset packed by `faster pack` (docs/lmdb_layout.md), memory-mapped read-only.  Opening walks
// the keys once and keeps a pointer to every record inside the map, so get() is a lookup and a copy
// with no LMDB call, safe from any number of threads; view() skips even the copy.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "faster/data/sources/lmdb_env.h"
#include "faster/data/sources/lmdb_format.h"
#include "faster/data/sources/source.h"

namespace faster::data {

class LmdbSource : public Source {
 public:
  // Throws faster::Error naming the path (and key) when it is not a database of this layout, its
  // metadata is missing or damaged, or records are missing.
  explicit LmdbSource(const std::filesystem::path& path);
  ~LmdbSource() override;

  int64_t size() const override { return static_cast<int64_t>(records_.size()); }
  void get(int64_t index, Sample& out) const override;
  int label(int64_t index) const override;
  const std::vector<std::string>& classes() const override { return meta_.classes; }
  std::string name(int64_t index) const override;
  std::string describe() const override;
  int64_t evict_page_cache() const override;

  // The stored record, pointing into the map (valid while this source lives).  Zero-copy.
  lmdb_format::RecordView view(int64_t index) const;
  const lmdb_format::Metadata& metadata() const { return meta_; }
  const std::string& path() const { return env_.path(); }

 private:
  void index_records();

  LmdbEnv env_;
  // Held open for the source's lifetime: it keeps every pointer in records_ valid.
  std::unique_ptr<LmdbTxn> txn_;
  lmdb_format::Metadata meta_;
  std::vector<MDB_val> records_;  // record i's value, inside the map
};

}  // namespace faster::data
