// Evicting a dataset from the page cache so that a benchmark measures the disk, not memory.
#pragma once

#include <string>

#include "faster/data/sources/source.h"

namespace faster::data {

// posix_fadvise(DONTNEED) on every file of the source, then (where permitted, i.e. as root outside
// a read-only /proc) `echo 1 > /proc/sys/vm/drop_caches`.  Returns what was done, for the report.
std::string evict_from_page_cache(const Source& source);

// Reads every sample once (from several threads) so that a warm benchmark really is warm.
// Returns the bytes read.
int64_t prefetch_into_page_cache(const Source& source, int threads);

}  // namespace faster::data
