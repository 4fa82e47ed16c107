// RAII owners of LMDB handles (MDB_env, MDB_txn) and the one check macro for LMDB calls, which
// names the database path (and key, where there is one) and LMDB's own reason.
#pragma once

#include <lmdb.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "faster/core/error.h"

namespace faster::data {

// An LMDB call failed; code() is LMDB's return code (MDB_MAP_FULL lets the writer grow the map).
class LmdbError : public Error {
 public:
  LmdbError(int code, const std::string& what, std::string hint = {})
      : Error(what, std::move(hint)), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

[[noreturn]] void throw_lmdb_error(int code, const std::string& context, const char* call,
                                   const char* file, int line);

}  // namespace faster::data

// FASTER_CHECK_LMDB(mdb_get(...), path, " key ", key): throws LmdbError with mdb_strerror().
#define FASTER_CHECK_LMDB(call, ...)                                                           \
  do {                                                                                         \
    const int faster_lmdb_rc_ = (call);                                                        \
    if (faster_lmdb_rc_ != MDB_SUCCESS)                                                        \
      ::faster::data::throw_lmdb_error(faster_lmdb_rc_, ::faster::detail::concat(__VA_ARGS__), \
                                       #call, __FILE__, __LINE__);                             \
  } while (0)

namespace faster::data {

struct LmdbMeta;  // lmdb_check.h

class LmdbEnv {
 public:
  // Opens an existing database for reading: `path` is its directory (holding data.mdb) or the
  // data file itself.  Without a lock file: faster's databases are immutable once packed, so
  // readers need no write access and never block each other.  The pages LMDB reads are checked
  // first (lmdb_check.h): damage throws LmdbDamage (code MDB_CORRUPTED) instead of crashing a
  // reader later; an empty, foreign or truncated file throws faster::Error.
  static LmdbEnv open_read_only(const std::filesystem::path& path);
  // Creates a database in the (new or empty) directory `dir` with the given initial map size.
  // Writes are not synced until sync(): a crashed pack is thrown away anyway.
  static LmdbEnv create(const std::filesystem::path& dir, size_t map_size);

  LmdbEnv(LmdbEnv&& other) noexcept;
  LmdbEnv& operator=(LmdbEnv&& other) noexcept;
  LmdbEnv(const LmdbEnv&) = delete;
  LmdbEnv& operator=(const LmdbEnv&) = delete;
  ~LmdbEnv();

  MDB_env* get() const { return env_; }
  const std::string& path() const { return path_; }
  size_t map_size() const;
  // Only while no write transaction is open.
  void set_map_size(size_t bytes);
  // Flushes everything written to disk (before the database is renamed into place).
  void sync();
  void close();

 private:
  LmdbEnv(MDB_env* env, std::string path) : env_(env), path_(std::move(path)) {}
  void check_tree(int fd, const LmdbMeta& meta) const;
  MDB_env* env_ = nullptr;
  std::string path_;
};

// A transaction on the main (unnamed) database; aborted on destruction unless committed.
class LmdbTxn {
 public:
  LmdbTxn(const LmdbEnv& env, bool read_only);
  LmdbTxn(const LmdbTxn&) = delete;
  LmdbTxn& operator=(const LmdbTxn&) = delete;
  ~LmdbTxn();

  MDB_txn* get() const { return txn_; }
  MDB_dbi dbi() const { return dbi_; }
  // The value stored under `key`, pointing into the map (valid while this transaction lives);
  // false when the key is absent.
  bool find(std::string_view key, MDB_val& value) const;
  void commit();
  void abort();

 private:
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_ = 0;
  std::string path_;
};

// A cursor over the transaction's main database, closed on destruction.
class LmdbCursor {
 public:
  explicit LmdbCursor(const LmdbTxn& txn, const std::string& path);
  LmdbCursor(const LmdbCursor&) = delete;
  LmdbCursor& operator=(const LmdbCursor&) = delete;
  ~LmdbCursor();
  // Moves (MDB_FIRST, MDB_NEXT, ...); false at the end.
  bool get(MDB_val& key, MDB_val& value, MDB_cursor_op op);

 private:
  MDB_cursor* cursor_ = nullptr;
  std::string path_;
};

inline std::string_view to_view(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

}  // namespace faster::data
