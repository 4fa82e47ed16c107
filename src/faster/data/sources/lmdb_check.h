// Checks an LMDB data file's pages before LMDB reads them.  LMDB trusts its pages: a damaged meta
// page makes mdb_env_open divide by a zero page size, a damaged branch or leaf page sends cursors
// through node offsets and key sizes outside the map (SIGSEGV), a node flag wrongly set makes it
// follow a null pointer, and a record size larger than its pages reads past the file (SIGBUS).
//
// Design: every reader checks, in its own process, what LMDB's read path relies on, then lets
// LMDB read.  The meta pages are read with pread before mdb_env_open; the main tree's branch and
// leaf pages are walked once before LMDB follows them: the pages a cursor walk over the keys
// touches anyway (records on overflow pages are only bounds-checked, never read), so the cost is
// about one more walk.  Measured on 100,000 records (a 2-core VM): warm, 7 ms with 15 KB records
// (LMDB's own key walk: 7-9 ms) and 19 ms with 1 KB records in the leaves (walk: 11 ms); cold, the
// check reads the pages the walk then finds cached, so opening takes as long as before.
// Rejected alternatives: walking the database in a child process (posix_spawn of faster itself)
// would turn the crash into an error but not say what is damaged, costs a second walk plus a
// process start (0.4 s: faster loads LibTorch), and cannot protect a library user or the tests,
// whose /proc/self/exe is not faster; a SIGSEGV handler that longjmps out of liblmdb is not sound
// in a threaded process and would take over other handlers.  The layout mirrored here is LMDB
// 0.9's on-disk format (mdb.c: MDB_page, MDB_node, MDB_meta); a read transaction's own view (its
// id and mdb_stat counts) is compared with the meta checked, so a misreading cannot pass silently.
#pragma once

#include <cstdint>
#include <string>

#include "faster/data/sources/lmdb_env.h"

namespace faster::data {

// Damage found in an LMDB file's pages: an LmdbError with LMDB's own code for it, MDB_CORRUPTED.
class LmdbDamage : public LmdbError {
 public:
  LmdbDamage(const std::string& where, const std::string& damage);
  // What is damaged, without the path ("page 37: node 5 lies outside the page").
  const std::string& damage() const { return damage_; }

 private:
  std::string damage_;
};

// The main database as the meta page a read transaction uses describes it.
struct LmdbMeta {
  uint32_t page_size = 0;
  uint64_t last_page = 0;  // the last page in use
  uint64_t txnid = 0;
  uint16_t flags = 0, depth = 0;
  uint64_t branch_pages = 0, leaf_pages = 0, overflow_pages = 0, entries = 0;
  uint64_t root = ~uint64_t{0};  // none: an empty database
};

// Reads both meta pages of the data file open as `fd` with pread and checks what mdb_env_open
// and a read transaction trust: a regular file, both metas stamped, one page size (a power of two
// LMDB can use), the tree's root and last page inside the file.  Returns the meta with the larger
// transaction id (the one LMDB reads).  Throws faster::Error naming `file` when it is not an LMDB
// file (empty, too short, no meta page) or truncated, and LmdbDamage when a meta page is damaged.
LmdbMeta check_lmdb_meta(int fd, const std::string& file);

// Walks the main tree of the data file open as `fd` (mapped read-only for the walk: the same page
// cache pages LMDB maps) from the meta's root and checks each branch and leaf page: its number
// and kind, every node inside it, child pages inside the file and entered once, leaves at one
// depth, records' overflow pages inside the file, and the counts against the meta.  Throws
// LmdbDamage naming `where` and the page.
void check_lmdb_tree(int fd, const LmdbMeta& meta, const std::string& where);

}  // namespace faster::data
