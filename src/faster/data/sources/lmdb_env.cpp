// LMDB handle owners.
#include "faster/data/sources/lmdb_env.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace faster::data {
namespace fs = std::filesystem;

void throw_lmdb_error(int code, const std::string& context, const char* call, const char* file,
                      int line) {
  std::string hint;
  if (code == MDB_INVALID || code == MDB_VERSION_MISMATCH)
    hint = "is it an LMDB database written by 'faster pack'?";
  throw LmdbError(
      code,
      detail::concat(context, ": ", mdb_strerror(code), " [", call, " at ", file, ":", line, "]"),
      hint);
}

namespace {

MDB_env* new_env(const std::string& path) {
  MDB_env* env = nullptr;
  FASTER_CHECK_LMDB(mdb_env_create(&env), path);
  return env;
}

}  // namespace

LmdbEnv LmdbEnv::open_read_only(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) FASTER_THROW("no such database: ", path.string());
  unsigned flags = MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS;
  if (fs::is_directory(status)) {
    if (!fs::exists(path / "data.mdb"))
      throw Error(detail::concat("not an LMDB database (no data.mdb in it): ", path.string()),
                  "make one with 'faster pack --src DIR --out DB'");
  } else {
    flags |= MDB_NOSUBDIR;
  }
  LmdbEnv env(new_env(path.string()), path.string());
  FASTER_CHECK_LMDB(mdb_env_open(env.env_, path.c_str(), flags, 0644), path.string());
  env.check_not_truncated();
  return env;
}

// LMDB maps the file and trusts its meta page: pages past the end of a truncated file would kill
// the reader with SIGBUS on first touch, so compare the file's size with the last page in use.
void LmdbEnv::check_not_truncated() const {
  MDB_envinfo info;
  MDB_stat stat;
  mdb_filehandle_t fd;
  FASTER_CHECK_LMDB(mdb_env_info(env_, &info), path_);
  FASTER_CHECK_LMDB(mdb_env_stat(env_, &stat), path_);
  FASTER_CHECK_LMDB(mdb_env_get_fd(env_, &fd), path_);
  struct stat st;
  if (::fstat(fd, &st) != 0) FASTER_THROW("cannot stat ", path_, ": ", std::strerror(errno));
  const uint64_t needed = (uint64_t{info.me_last_pgno} + 1) * stat.ms_psize;
  if (static_cast<uint64_t>(st.st_size) < needed)
    throw Error(detail::concat(path_, ": database file is truncated (", st.st_size,
                               " bytes, its pages need ", needed, ")"),
                "the copy is incomplete or the disk filled up: copy or pack it again");
}

LmdbEnv LmdbEnv::create(const fs::path& dir, size_t map_size) {
  fs::create_directories(dir);
  LmdbEnv env(new_env(dir.string()), dir.string());
  env.set_map_size(map_size);
  // NOSYNC: one fsync at the end (sync()) instead of one per commit; the database is only
  // renamed into place after that, so a crash can never leave a half-synced database behind.
  FASTER_CHECK_LMDB(mdb_env_open(env.env_, dir.c_str(), MDB_NOSYNC, 0644), dir.string());
  return env;
}

LmdbEnv::LmdbEnv(LmdbEnv&& other) noexcept
    : env_(std::exchange(other.env_, nullptr)), path_(std::move(other.path_)) {}

LmdbEnv& LmdbEnv::operator=(LmdbEnv&& other) noexcept {
  if (this != &other) {
    close();
    env_ = std::exchange(other.env_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

LmdbEnv::~LmdbEnv() {
  close();
}

void LmdbEnv::close() {
  if (env_) mdb_env_close(std::exchange(env_, nullptr));
}

size_t LmdbEnv::map_size() const {
  MDB_envinfo info;
  FASTER_CHECK_LMDB(mdb_env_info(env_, &info), path_);
  return info.me_mapsize;
}

void LmdbEnv::set_map_size(size_t bytes) {
  FASTER_CHECK_LMDB(mdb_env_set_mapsize(env_, bytes), path_, ": map size ", bytes);
}

void LmdbEnv::sync() {
  FASTER_CHECK_LMDB(mdb_env_sync(env_, 1), path_);
}

LmdbTxn::LmdbTxn(const LmdbEnv& env, bool read_only) : path_(env.path()) {
  FASTER_CHECK_LMDB(mdb_txn_begin(env.get(), nullptr, read_only ? MDB_RDONLY : 0, &txn_), path_);
  const int rc = mdb_dbi_open(txn_, nullptr, 0, &dbi_);
  if (rc != MDB_SUCCESS) {
    mdb_txn_abort(std::exchange(txn_, nullptr));
    throw_lmdb_error(rc, path_, "mdb_dbi_open", __FILE__, __LINE__);
  }
}

LmdbTxn::~LmdbTxn() {
  abort();
}

bool LmdbTxn::find(std::string_view key, MDB_val& value) const {
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  const int rc = mdb_get(txn_, dbi_, &k, &value);
  if (rc == MDB_NOTFOUND) return false;
  FASTER_CHECK_LMDB(rc, path_, " key '", key, "'");
  return true;
}

void LmdbTxn::commit() {
  FASTER_CHECK(txn_, "commit of a finished transaction");
  // LMDB frees the transaction even when the commit fails.
  FASTER_CHECK_LMDB(mdb_txn_commit(std::exchange(txn_, nullptr)), path_);
}

void LmdbTxn::abort() {
  if (txn_) mdb_txn_abort(std::exchange(txn_, nullptr));
}

LmdbCursor::LmdbCursor(const LmdbTxn& txn, const std::string& path) : path_(path) {
  FASTER_CHECK_LMDB(mdb_cursor_open(txn.get(), txn.dbi(), &cursor_), path_);
}

LmdbCursor::~LmdbCursor() {
  if (cursor_) mdb_cursor_close(cursor_);
}

bool LmdbCursor::get(MDB_val& key, MDB_val& value, MDB_cursor_op op) {
  const int rc = mdb_cursor_get(cursor_, &key, &value, op);
  if (rc == MDB_NOTFOUND) return false;
  FASTER_CHECK_LMDB(rc, path_);
  return true;
}

}  // namespace faster::data
