// 200 mutated JPEGs (data/jpeg_mutations.h) through the programs, as a user meets damaged files:
// `faster load` (CPU decode) and `faster resize`, each over one tree of them, beside a run over the
// valid files they were made from.  No run may crash or hang (a time limit ends it and fails the
// test), or peak at much more memory than the valid run; every file is decoded or counted bad,
// judged against the decoder's own full decode of it, and the counts add up.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "data/jpeg_mutations.h"
#include "faster/core/error.h"
#include "faster/tools/downscale.h"
#include "faster/tools/resize.h"
#include "tools/tool_fixtures.h"

namespace faster::test {
namespace {
namespace fs = std::filesystem;

constexpr const char* kLimit = "timeout 120 ";
// Beyond the valid run's peak: what two workers' headers can claim under the decoder's block check
// (see JpegDecoder.DecodesOrRefusesEveryMutationQuickly), and allocator noise.
constexpr long kMemoryMarginKb = 64 * 1024;
constexpr int kMaxSize = 120;

// Two class folders: a/ the baseline file's mutations, b/ the progressive one's.
std::string mutation_path(uint32_t seed) {
  char name[16];
  std::snprintf(name, sizeof name, "%s/%03u.jpg", seed % 2 == 0 ? "a" : "b", seed);
  return name;
}

struct MutatedTrees {
  TempDir tmp;
  fs::path mutated = tmp / "mutated", valid = tmp / "valid";
  std::set<std::string> refused;          // what a full decode refuses
  std::set<std::string> header_refused;   // of those, what open() already refuses
  std::map<std::string, JpegSize> sizes;  // the header's size of the others

  MutatedTrees() {
    data::JpegDecoder decoder;
    data::ImageBuffer out;
    for (uint32_t seed = 0; seed < kMutations; ++seed) {
      const std::string rel = mutation_path(seed);
      const std::vector<uint8_t> bytes = mutate_jpeg(seed);
      fs::create_directories((mutated / rel).parent_path());
      fs::create_directories((valid / rel).parent_path());
      write_file(mutated / rel, to_string(bytes));
      write_file(valid / rel, to_string(mutation_base(seed)));
      try {
        decoder.open(bytes.data(), bytes.size());
      } catch (const Error&) {
        header_refused.insert(rel);
        refused.insert(rel);
        continue;
      }
      try {
        decoder.decode({}, 0, 0, out);
        sizes[rel] = {decoder.info().width, decoder.info().height};
      } catch (const Error&) {
        refused.insert(rel);
      }
    }
  }

  // Runs `faster <command> DIR <flags>` on one of the trees, for its peak memory.
  Measured run(const std::string& command, const fs::path& dir, const std::string& flags) const {
    return run_measured(std::string(kLimit) + "env FASTER_PROGRESS=plain " + FASTER_BIN + " " +
                            command + " " + quoted(dir) + " " + flags,
                        tmp / "log");
  }
};

const MutatedTrees& trees() {
  static const MutatedTrees t;
  return t;
}

// One epoch: every position gets an image (a bad one is replaced by the next), and each file the
// loader refuses is counted once.  The loader decodes only the rows its crop needs, so it refuses
// at least what the header check refuses and at most what a full decode refuses.
TEST(MutatedJpegs, LoadDecodesOrSkipsEachInBoundedTimeAndMemory) {
  const MutatedTrees& t = trees();
  const auto load = [&](const fs::path& dir) {
    const std::string flags = "--epochs 1 --batch 8 --workers 2 --warmup 0 --size 64 --json " +
                              quoted(t.tmp / "report.json");
    const Measured m = t.run("load", dir, flags);
    nlohmann::json report;
    if (m.exit_code == 0 || m.exit_code == 3)
      report = nlohmann::json::parse(read_file(t.tmp / "report.json"));
    return std::make_pair(m, report);
  };
  const auto [valid, valid_report] = load(t.valid);
  const auto [mutated, report] = load(t.mutated);
  ASSERT_EQ(valid.exit_code, 0) << valid.output;
  ASSERT_EQ(mutated.exit_code, 3) << mutated.output;  // done, but bad images skipped
  EXPECT_EQ(valid_report["skipped"], 0);
  EXPECT_EQ(report["images"], kMutations);
  EXPECT_EQ(report["batches"], kMutations / 8);
  const int64_t skipped = report["skipped"];
  EXPECT_GE(skipped, static_cast<int64_t>(t.header_refused.size()));
  EXPECT_LE(skipped, static_cast<int64_t>(t.refused.size()));
  EXPECT_NE(mutated.output.find("bad images skipped: " + std::to_string(skipped)),
            std::string::npos)
      << mutated.output;
  const std::string root = t.mutated.string() + "/";
  for (const std::string name : report["skipped_names"]) {  // "PATH: reason", the first 20
    ASSERT_EQ(name.rfind(root, 0), 0u) << name;
    const std::string rel = name.substr(root.size(), name.find(": ") - root.size());
    EXPECT_EQ(t.refused.count(rel), 1u) << name;
  }
  EXPECT_LT(mutated.max_rss_kb - valid.max_rss_kb, kMemoryMarginKb)
      << mutated.max_rss_kb << " KB against " << valid.max_rss_kb << " KB for the valid files";
}

// resize decodes each file whole (at a DCT scale): it writes an output for exactly the files a full
// decode accepts, each at its downscaled size (or copied if its header makes it small enough),
// and reports exactly the others.
TEST(MutatedJpegs, ResizeWritesOrReportsEachInBoundedTimeAndMemory) {
  const MutatedTrees& t = trees();
  const std::string flags = "--max-size " + std::to_string(kMaxSize) + " --workers 2 --dst ";
  const Measured valid = t.run("resize --src", t.valid, flags + quoted(t.tmp / "valid-out"));
  const fs::path dst = t.tmp / "out";
  const Measured mutated = t.run("resize --src", t.mutated, flags + quoted(dst));
  ASSERT_EQ(valid.exit_code, 0) << valid.output;
  EXPECT_EQ(resize_counts(valid.output).downscaled, kMutations) << valid.output;
  ASSERT_EQ(mutated.exit_code, 3) << mutated.output;  // done, some images bad
  const ResizeCounts c = resize_counts(mutated.output);
  EXPECT_EQ(c.files, kMutations) << mutated.output;
  EXPECT_EQ(c.bad, static_cast<long long>(t.refused.size())) << mutated.output;
  EXPECT_EQ(c.downscaled + c.copied + c.up_to_date + c.bad, c.files) << mutated.output;

  std::set<std::string> reported;
  std::istringstream report(read_file(dst / tools::kResizeReport));
  std::string line;
  std::getline(report, line);  // the header
  while (std::getline(report, line)) reported.insert(line.substr(0, line.find('\t')));
  EXPECT_EQ(reported, t.refused);
  for (uint32_t seed = 0; seed < kMutations; ++seed) {
    const std::string rel = mutation_path(seed);
    SCOPED_TRACE(rel);
    const auto size = t.sizes.find(rel);
    if (size == t.sizes.end()) {
      EXPECT_FALSE(fs::exists(dst / rel));
      continue;
    }
    const tools::Size want =
        tools::downscaled_size(size->second.width, size->second.height, kMaxSize);
    if (want.width == size->second.width && want.height == size->second.height) {
      EXPECT_EQ(read_file(dst / rel), read_file(t.mutated / rel));
      continue;
    }
    try {
      const JpegSize out = decoded_size(dst / rel);
      EXPECT_EQ(out.width, want.width);
      EXPECT_EQ(out.height, want.height);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_LT(mutated.max_rss_kb - valid.max_rss_kb, kMemoryMarginKb)
      << mutated.max_rss_kb << " KB against " << valid.max_rss_kb << " KB for the valid files";
}

}  // namespace
}  // namespace faster::test
