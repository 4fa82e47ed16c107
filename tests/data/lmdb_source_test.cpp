// LmdbWriter and LmdbSource, and databases written here key by key to damage the layout on purpose
// (pack's own round trip is in tests/tools/pack_test.cpp): reads, map growth, concurrency,
// sharding, and the errors for damaged layouts.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "faster/data/loader/sampler.h"
#include "faster/data/sources/lmdb_env.h"
#include "faster/data/sources/lmdb_format.h"
#include "faster/data/sources/lmdb_source.h"
#include "faster/data/sources/lmdb_writer.h"
#include "support/test_support.h"

namespace faster::data {
namespace {
namespace fmt = lmdb_format;
using test::TempDir;

void put(const LmdbTxn& txn, std::string_view key, const std::string& value) {
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<char*>(value.data())};
  FASTER_CHECK_LMDB(mdb_put(txn.get(), txn.dbi(), &k, &v, 0), "test db");
}

std::string record(int label, const std::string& image) {
  std::string value(fmt::kRecordHeaderBytes, '\0');
  fmt::write_record_header(label,
                           fmt::crc32(reinterpret_cast<const uint8_t*>(image.data()), image.size()),
                           reinterpret_cast<uint8_t*>(value.data()));
  return value + image;
}

std::string image_bytes(int i) {
  return "image-" + std::to_string(i) + std::string(i * 100, 'x');
}

// Writes records 0..count-1 (except `missing`) with label i % 3, and metadata claiming `count`.
void write_db(const std::filesystem::path& dir, int count, bool with_meta = true,
              std::optional<int> missing = std::nullopt) {
  LmdbEnv env = LmdbEnv::create(dir, 1 << 20);
  LmdbTxn txn(env, false);
  for (int i = 0; i < count; ++i)
    if (i != missing) put(txn, fmt::record_key(i).view(), record(i % 3, image_bytes(i)));
  if (with_meta) {
    fmt::Metadata m;
    m.count = count;
    m.classes = {"a", "b", "c"};
    put(txn, fmt::kMetaKey, fmt::encode_metadata(m));
  }
  txn.commit();
  env.sync();
}

std::string error_of(const std::filesystem::path& path) {
  try {
    LmdbSource source(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LmdbSource, ReadsRecordsLabelsAndClasses) {
  TempDir tmp;
  write_db(tmp / "db", 10);
  LmdbSource source(tmp / "db");
  ASSERT_EQ(source.size(), 10);
  EXPECT_EQ(source.classes(), (std::vector<std::string>{"a", "b", "c"}));
  Sample sample;
  for (int i = 0; i < 10; ++i) {
    source.get(i, sample);
    EXPECT_EQ(std::string(sample.bytes.begin(), sample.bytes.end()), image_bytes(i));
    EXPECT_EQ(sample.label, i % 3);
    EXPECT_EQ(source.label(i), i % 3);
    const auto view = source.view(i);  // zero-copy: points into the map
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(view.data), view.size), image_bytes(i));
  }
  EXPECT_NE(source.name(7).find("0000000007"), std::string::npos);
  EXPECT_NE(source.describe().find("3 classes, 10 images"), std::string::npos);
  EXPECT_EQ(source.evict_page_cache(), 1);
  // The data file itself opens too.
  EXPECT_EQ(LmdbSource(tmp / "db" / "data.mdb").size(), 10);
}

TEST(LmdbWriter, GrowsTheMapAndTheSourceReadsEveryRecordBack) {
  TempDir tmp;
  LmdbWriter writer(tmp / "db", 16 * 1024, 8 * 1024);  // 4 pages, several batches
  for (int i = 0; i < 50; ++i) {
    const std::string img = image_bytes(i);
    writer.append(i % 3, fmt::crc32(reinterpret_cast<const uint8_t*>(img.data()), img.size()),
                  std::vector<uint8_t>(img.begin(), img.end()));
  }
  fmt::Metadata m;
  m.count = writer.count();
  m.classes = {"a", "b", "c"};
  writer.finish(m);
  EXPECT_GT(writer.growths(), 0);
  const LmdbSource source(tmp / "db");
  ASSERT_EQ(source.size(), 50);
  for (int i = 0; i < 50; ++i) {
    const auto r = source.view(i);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.data), r.size), image_bytes(i));
    EXPECT_EQ(r.label, i % 3);
    EXPECT_TRUE(fmt::record_intact(r));
  }
}

TEST(LmdbSource, ConcurrentReadsMatchSequentialOnes) {
  TempDir tmp;
  write_db(tmp / "db", 64);
  const LmdbSource source(tmp / "db");
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Sample s;
      for (int round = 0; round < 20; ++round)
        for (int i = t; i < 64; i += 2) {
          source.get(i, s);
          mismatches[t] += std::string(s.bytes.begin(), s.bytes.end()) != image_bytes(i);
        }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(LmdbSource, ShardsThroughTheSamplerCoverEveryRecordOnce) {
  TempDir tmp;
  write_db(tmp / "db", 12);
  const LmdbSource source(tmp / "db");
  std::multiset<int64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    Sampler sampler(source.size(), {rank, 3, 5, true, false});
    for (int64_t i : sampler.indices(2)) seen.insert(i);
  }
  ASSERT_EQ(seen.size(), 12u);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
}

TEST(LmdbSource, ErrorsNameThePathAndTheKey) {
  TempDir tmp;
  write_db(tmp / "no_meta", 3, false);
  const std::string no_meta = error_of(tmp / "no_meta");
  EXPECT_NE(no_meta.find((tmp / "no_meta").string()), std::string::npos) << no_meta;
  EXPECT_NE(no_meta.find("'__meta__'"), std::string::npos) << no_meta;

  write_db(tmp / "gap", 5, true, 2);
  const std::string gap = error_of(tmp / "gap");
  EXPECT_NE(gap.find("record key '0000000002' is missing"), std::string::npos) << gap;

  write_db(tmp / "short", 4, true, 3);  // the last record is missing: count differs
  EXPECT_NE(error_of(tmp / "short").find("metadata says 4 records, the database holds 3"),
            std::string::npos);

  EXPECT_NE(error_of(tmp / "absent").find("no such database"), std::string::npos);
  std::filesystem::create_directories(tmp / "folder");
  EXPECT_NE(error_of(tmp / "folder").find("not an LMDB database"), std::string::npos);
  test::write_file(tmp / "junk.mdb", std::string(20000, 'j'));
  EXPECT_NE(error_of(tmp / "junk.mdb").find("junk.mdb"), std::string::npos);
}

TEST(LmdbSource, TruncatedFileIsRefusedInsteadOfCrashing) {
  TempDir tmp;
  write_db(tmp / "db", 40);
  const auto file = tmp / "db" / "data.mdb";
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  const std::string e = error_of(tmp / "db");
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

}  // namespace
}  // namespace faster::data
