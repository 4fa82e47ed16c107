// Page-cache control for `faster load --cold` and warm runs.
#include "faster/data/sources/page_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <vector>

#include "faster/core/file.h"
#include "faster/core/parallel.h"

namespace faster::data {

std::string evict_from_page_cache(const Source& source) {
  const int64_t advised = source.evict_page_cache();
  std::string done = "posix_fadvise(DONTNEED) on " + std::to_string(advised) + " file(s)";
  ::sync();
  File f("/proc/sys/vm/drop_caches", "w");
  const bool dropped = f && std::fputs("1\n", f.get()) >= 0 && f.close() == 0;
  return done + (dropped ? " + drop_caches" : " (drop_caches not permitted here)");
}

int64_t prefetch_into_page_cache(const Source& source, int threads) {
  const int workers = worker_count(std::max(1, threads), source.size());
  std::vector<Sample> samples(static_cast<size_t>(workers));  // each worker's buffer
  std::atomic<int64_t> bytes{0};
  parallel_for(workers, source.size(), [&](int worker, int64_t i) {
    Sample& s = samples[static_cast<size_t>(worker)];
    try {
      source.get(i, s);
      bytes += static_cast<int64_t>(s.bytes.size());
    } catch (const std::exception&) {
      // unreadable samples are the loader's to report
    }
  });
  return bytes;
}

}  // namespace faster::data
