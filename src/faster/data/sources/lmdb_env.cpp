// LMDB handle owners.  A database opened for reading has had its pages checked (lmdb_check.h).
#include "faster/data/sources/lmdb_env.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "faster/core/fd.h"
#include "faster/data/sources/lmdb_check.h"

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
  fs::path file = path;
  if (fs::is_directory(status)) {
    file = path / "data.mdb";
    if (!fs::exists(file))
      throw Error(detail::concat("not an LMDB database (no data.mdb in it): ", path.string()),
                  "make one with 'faster pack --src DIR --out DB'");
  } else {
    flags |= MDB_NOSUBDIR;
  }
  // Non-blocking: a FIFO under the name is refused by the check instead of hanging the open.
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) FASTER_THROW("cannot open ", file.string(), ": ", std::strerror(errno));
  const LmdbMeta meta = check_lmdb_meta(fd.get(), file.string());
  LmdbEnv env(new_env(path.string()), path.string());
  FASTER_CHECK_LMDB(mdb_env_open(env.env_, path.c_str(), flags, 0644), path.string());
  env.check_tree(fd.get(), meta);
  return env;
}

// The tree is checked as the read transaction LMDB starts sees it: the same meta page (its
// transaction id) with the same counts, or the check would not be about what LMDB reads.
void LmdbEnv::check_tree(int fd, const LmdbMeta& meta) const {
  MDB_envinfo info;
  FASTER_CHECK_LMDB(mdb_env_info(env_, &info), path_);
  LmdbTxn txn(*this, true);
  MDB_stat st;
  FASTER_CHECK_LMDB(mdb_stat(txn.get(), txn.dbi(), &st), path_);
  if (mdb_txn_id(txn.get()) != meta.txnid || st.ms_psize != meta.page_size ||
      st.ms_depth != meta.depth || st.ms_entries != meta.entries ||
      st.ms_branch_pages != meta.branch_pages || st.ms_leaf_pages != meta.leaf_pages ||
      st.ms_overflow_pages != meta.overflow_pages || info.me_last_pgno != meta.last_page)
    throw LmdbDamage(
        path_, detail::concat("LMDB reads transaction ", mdb_txn_id(txn.get()), " (", st.ms_entries,
                              " records, depth ", st.ms_depth,
                              "), not the meta page checked: transaction ", meta.txnid, " (",
                              meta.entries, " records, depth ", meta.depth, ")"));
  check_lmdb_tree(fd, meta, path_);
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
