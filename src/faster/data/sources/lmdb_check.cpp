// LMDB page checks.  Field offsets are LMDB's (64-bit pgno_t and size_t, little-endian); every
// read is a memcpy at a checked offset, so a damaged page cannot make the check itself fault.
#include "faster/data/sources/lmdb_check.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "faster/core/error.h"

namespace faster::data {
namespace {

static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "LMDB's 64-bit layout is mirrored");

// MDB_page header: pgno (8), pad (2), flags (2), lower and upper (2 + 2), then node offsets.
constexpr size_t kPageHeader = 16;
constexpr uint16_t kBranch = 0x01, kLeaf = 0x02, kOverflow = 0x04, kMetaPage = 0x08, kLeaf2 = 0x20,
                   kSubPage = 0x40;
constexpr uint16_t kKindBits = kBranch | kLeaf | kOverflow | kMetaPage | kLeaf2 | kSubPage;
// MDB_node header: lo, hi (data size, or with flags the child page), flags, key size (2 each).
constexpr size_t kNodeHeader = 8;
constexpr uint16_t kBigData = 0x01;  // F_BIGDATA: the value is on overflow pages
// MDB_meta, after the page header: magic, version (4 + 4), address, map size (8 + 8), then the
// free and main databases (48 bytes each: pad 4, flags 2, depth 2, branch, leaf and overflow
// pages, entries, root: 8 each), last page, txnid (8 each).
constexpr uint32_t kMagic = 0xBEEFC0DE, kVersion = 1;
constexpr size_t kMetaBytes = 136;
constexpr size_t kFreeDb = 24, kMainDb = 72, kLastPage = 120, kTxnId = 128;
constexpr uint32_t kMinPageSize = 256, kMaxPageSize = 0x8000;  // LMDB's MAX_PAGESIZE
constexpr uint16_t kMaxDepth = 31;                             // a cursor holds 32 pages
constexpr uint64_t kNoPage = ~uint64_t{0};

template <typename T>
T load(const uint8_t* p, size_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof v);
  return v;
}

std::string reason(int code) {
  char buf[256];
  return strerror_r(code, buf, sizeof buf);
}

struct MetaPage {
  bool stamped = false;  // meta flag, magic and version as LMDB writes them
  uint32_t page_size = 0;
  LmdbMeta meta;
};

MetaPage parse_meta(const uint8_t* page) {
  MetaPage m;
  const uint8_t* meta = page + kPageHeader;
  m.stamped = (load<uint16_t>(page, 10) & kMetaPage) != 0 && load<uint32_t>(meta, 0) == kMagic &&
              load<uint32_t>(meta, 4) == kVersion;
  m.page_size = load<uint32_t>(meta, kFreeDb);  // mm_psize lives in the free database's pad
  LmdbMeta& r = m.meta;
  r.page_size = m.page_size;
  r.flags = load<uint16_t>(meta, kMainDb + 4);
  r.depth = load<uint16_t>(meta, kMainDb + 6);
  r.branch_pages = load<uint64_t>(meta, kMainDb + 8);
  r.leaf_pages = load<uint64_t>(meta, kMainDb + 16);
  r.overflow_pages = load<uint64_t>(meta, kMainDb + 24);
  r.entries = load<uint64_t>(meta, kMainDb + 32);
  r.root = load<uint64_t>(meta, kMainDb + 40);
  r.last_page = load<uint64_t>(meta, kLastPage);
  r.txnid = load<uint64_t>(meta, kTxnId);
  return m;
}

bool usable_page_size(uint32_t size) {
  return size >= kMinPageSize && size <= kMaxPageSize && (size & (size - 1)) == 0;
}

void read_exactly(int fd, uint8_t* buf, size_t size, off_t at, const std::string& file) {
  const ssize_t n = ::pread(fd, buf, size, at);
  if (n < 0) FASTER_THROW("cannot read ", file, ": ", reason(errno));
  if (static_cast<size_t>(n) != size) FASTER_THROW("cannot read ", file, ": it shrank");
}

// One walk over the main tree; counts what it finds for the comparison with the meta.
class TreeWalk {
 public:
  TreeWalk(const uint8_t* map, const LmdbMeta& meta, const std::string& where)
      : map_(map), meta_(meta), where_(where), seen_(meta.last_page + 1, false) {}

  void run() {
    if (meta_.root != kNoPage) visit(meta_.root, 0, "the root");
    const auto expect = [&](const char* what, uint64_t in_meta, uint64_t found) {
      if (in_meta != found)
        throw LmdbDamage(where_, detail::concat("the meta page counts ", in_meta, " ", what,
                                                ", the tree holds ", found));
    };
    expect("records", meta_.entries, entries_);
    expect("branch pages", meta_.branch_pages, branch_pages_);
    expect("leaf pages", meta_.leaf_pages, leaf_pages_);
    expect("overflow pages", meta_.overflow_pages, overflow_pages_);
  }

 private:
  [[noreturn]] void damaged(uint64_t pgno, const std::string& what) const {
    throw LmdbDamage(where_, detail::concat("page ", pgno, ": ", what));
  }

  // `from` names the reference, for the message when the page number itself is wrong.
  void visit(uint64_t pgno, int level, const std::string& from) {
    if (pgno < 2 || pgno > meta_.last_page)
      throw LmdbDamage(where_, detail::concat(from, " points to page ", pgno,
                                              ", outside pages 2 to ", meta_.last_page));
    if (seen_[pgno]) damaged(pgno, "reached twice in the tree (a loop)");
    seen_[pgno] = true;
    const uint32_t size = meta_.page_size;
    const uint8_t* page = map_ + pgno * size;
    if (load<uint64_t>(page, 0) != pgno)
      damaged(pgno, detail::concat("its header says page ", load<uint64_t>(page, 0)));
    const bool branch = level + 1 < meta_.depth;
    const uint16_t kind = load<uint16_t>(page, 10) & kKindBits;
    if (kind != (branch ? kBranch : kLeaf))
      damaged(pgno, detail::concat("flags 0x", std::hex, load<uint16_t>(page, 10), std::dec,
                                   " where the tree needs a ", branch ? "branch" : "leaf",
                                   " page (depth ", level + 1, " of ", meta_.depth, ")"));
    const uint16_t lower = load<uint16_t>(page, 12), upper = load<uint16_t>(page, 14);
    if (lower < kPageHeader || lower % 2 != 0 || lower > upper || upper > size)
      damaged(pgno,
              detail::concat("free space from ", lower, " to ", upper, " in a page of ", size));
    const size_t keys = (lower - kPageHeader) / 2;
    if (keys < (branch ? 2u : 1u)) damaged(pgno, detail::concat("only ", keys, " keys"));
    ++(branch ? branch_pages_ : leaf_pages_);
    for (size_t i = 0; i < keys; ++i) {
      const size_t node = load<uint16_t>(page, kPageHeader + 2 * i);
      if (node < upper || node % 2 != 0 || node + kNodeHeader > size)
        damaged(pgno, detail::concat("node ", i, " at offset ", node, " is outside its nodes"));
      const uint16_t lo = load<uint16_t>(page, node), hi = load<uint16_t>(page, node + 2);
      const uint16_t flags = load<uint16_t>(page, node + 4);
      const size_t data = node + kNodeHeader + load<uint16_t>(page, node + 6);  // after the key
      if (data > size) damaged(pgno, detail::concat("node ", i, "'s key runs past the page"));
      if (branch) {
        const uint64_t child = lo | uint64_t{hi} << 16 | uint64_t{flags} << 32;
        visit(child, level + 1, detail::concat("page ", pgno, " node ", i));
        continue;
      }
      check_record(pgno, i, page, data, lo | uint64_t{hi} << 16, flags);
    }
  }

  // A leaf node's value: in the page, or on overflow pages that must lie inside the file.
  void check_record(uint64_t pgno, size_t i, const uint8_t* page, size_t data, uint64_t bytes,
                    uint16_t flags) {
    ++entries_;
    const uint32_t size = meta_.page_size;
    // Sub-databases and duplicates send LMDB to structures faster never writes.
    if ((flags & ~kBigData) != 0)
      damaged(pgno, detail::concat("node ", i, " has flags 0x", std::hex, flags));
    if ((flags & kBigData) == 0) {
      if (data + bytes > size)
        damaged(pgno, detail::concat("node ", i, "'s ", bytes, " bytes run past the page"));
      return;
    }
    if (data + 8 > size) damaged(pgno, detail::concat("node ", i, "'s page number runs past"));
    const uint64_t first = load<uint64_t>(page, data);
    const uint64_t pages = (kPageHeader - 1 + bytes) / size + 1;  // LMDB's OVPAGES
    if (first < 2 || first > meta_.last_page || pages > meta_.last_page - first + 1)
      damaged(pgno, detail::concat("node ", i, "'s ", bytes, " bytes at page ", first,
                                   " run past the last page ", meta_.last_page));
    overflow_pages_ += pages;
  }

  const uint8_t* map_;
  const LmdbMeta& meta_;
  const std::string& where_;
  std::vector<bool> seen_;
  uint64_t entries_ = 0, branch_pages_ = 0, leaf_pages_ = 0, overflow_pages_ = 0;
};

}  // namespace

LmdbDamage::LmdbDamage(const std::string& where, const std::string& damage)
    : LmdbError(MDB_CORRUPTED, detail::concat(where, ": damaged LMDB database: ", damage,
                                              " (pack it again, or restore a copy)")),
      damage_(damage) {}

LmdbMeta check_lmdb_meta(int fd, const std::string& file) {
  struct stat st;
  if (::fstat(fd, &st) != 0) FASTER_THROW("cannot stat ", file, ": ", reason(errno));
  if (!S_ISREG(st.st_mode)) FASTER_THROW(file, " is not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size == 0)
    throw Error(detail::concat(file, " is empty (0 bytes): not an LMDB database"),
                "an interrupted copy or pack leaves such a file: copy or pack it again");
  const std::string not_lmdb = " is not an LMDB database";
  const std::string hint = "is it a database written by 'faster pack'?";
  uint8_t buf[kPageHeader + kMetaBytes];
  if (file_size < 2 * kMinPageSize)
    throw Error(detail::concat(file, not_lmdb, " (", file_size, " bytes, too short)"), hint);
  read_exactly(fd, buf, sizeof buf, 0, file);
  const MetaPage first = parse_meta(buf);
  if (!first.stamped) throw Error(file + not_lmdb + " (no LMDB meta page at its start)", hint);
  if (!usable_page_size(first.page_size))
    throw LmdbDamage(file, detail::concat("meta page 0: page size ", first.page_size));
  if (file_size < 2 * uint64_t{first.page_size})
    throw Error(detail::concat(file, " is truncated (", file_size, " bytes, less than its two ",
                               first.page_size, "-byte meta pages)"),
                "the copy is incomplete or the disk filled up: copy or pack it again");
  read_exactly(fd, buf, sizeof buf, first.page_size, file);
  const MetaPage second = parse_meta(buf);
  if (!second.stamped) throw LmdbDamage(file, "meta page 1 is not stamped as one");
  if (second.page_size != first.page_size)
    throw LmdbDamage(file, detail::concat("meta page 1: page size ", second.page_size,
                                          ", page 0 says ", first.page_size));
  // What mdb_txn_begin picks for a reader without a lock file.
  const LmdbMeta meta = first.meta.txnid < second.meta.txnid ? second.meta : first.meta;
  const char* which = first.meta.txnid < second.meta.txnid ? "meta page 1" : "meta page 0";
  if (meta.last_page < 1 || meta.last_page >= file_size / meta.page_size) {
    const uint64_t needed = (meta.last_page + 1) * uint64_t{meta.page_size};
    if (meta.last_page < 1 || meta.last_page >= (uint64_t{1} << 48))
      throw LmdbDamage(file, detail::concat(which, ": last page ", meta.last_page));
    throw Error(detail::concat(file, ": database file is truncated (", file_size,
                               " bytes, its pages need ", needed, ")"),
                "the copy is incomplete or the disk filled up: copy or pack it again");
  }
  if (meta.flags != 0)
    throw LmdbDamage(file, detail::concat(which, ": main database flags 0x", std::hex, meta.flags,
                                          " (faster writes none)"));
  const bool empty = meta.root == kNoPage;
  if (empty
          ? meta.depth != 0 || meta.entries != 0
          : meta.depth < 1 || meta.depth > kMaxDepth || meta.root < 2 || meta.root > meta.last_page)
    throw LmdbDamage(file, detail::concat(which, ": root page ", meta.root, ", depth ", meta.depth,
                                          ", ", meta.entries, " records"));
  return meta;
}

void check_lmdb_tree(int fd, const LmdbMeta& meta, const std::string& where) {
  if (meta.root == kNoPage) return;
  const size_t bytes = (meta.last_page + 1) * size_t{meta.page_size};  // inside the file: checked
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) FASTER_THROW("cannot map ", where, ": ", reason(errno));
  const std::unique_ptr<void, std::function<void(void*)>> unmap(
      map, [bytes](void* p) { ::munmap(p, bytes); });
  TreeWalk(static_cast<const uint8_t*>(map), meta, where).run();
}

}  // namespace faster::data
