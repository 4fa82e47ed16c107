// `faster pack`: folder -> LMDB -> LmdbSource round trip, downscaling on the way in, map growth,
// atomicity, bad input, and --verify finding damage.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "faster/core/error.h"
#include "faster/data/sources/folder_source.h"
#include "faster/data/sources/lmdb_env.h"
#include "faster/data/sources/lmdb_format.h"
#include "faster/data/sources/lmdb_source.h"
#include "faster/data/sources/open_source.h"
#include "faster/tools/file_io.h"
#include "faster/tools/pack.h"
#include "tools/tool_fixtures.h"

namespace faster::test {
namespace {
namespace fs = std::filesystem;
namespace fmt = data::lmdb_format;

// Three classes, images at two depths, in an order that sorting must fix.
struct PackTree {
  TempDir tmp;
  fs::path src = tmp / "src", db = tmp / "db";
  // In the order the loader reads them: classes sorted, then paths within a class sorted.
  std::vector<std::pair<std::string, int>> expected = {
      {"ant/1.JPEG", 0}, {"ant/2.jpg", 0},  {"ant/sub/0.JPEG", 0},
      {"bee/9.JPEG", 1}, {"cow/a.jpeg", 2}, {"cow/b.JPEG", 2},
  };
  PackTree() {
    int i = 0;
    for (const auto& [rel, label] : expected)
      write_jpeg(src, rel, 120 + 40 * i++, 100 + 10 * label);
    write_file(src / "ant/readme.txt", "ignored");
  }
  std::string args(const std::string& extra = "") const {
    return "pack --src " + quoted(src) + " --out " + quoted(db) + " " + extra;
  }
};

TEST(Pack, RoundTripGivesTheFolderBytesAndLabels) {
  PackTree t;
  const RunResult r = run_faster(t.args("--workers 3"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("6 images, 3 classes"), std::string::npos) << r.output;
  EXPECT_EQ(all_files(t.db), std::vector<std::string>{"data.mdb"});  // no lock file, no temp
  EXPECT_FALSE(fs::exists(t.tmp / ".db.faster-tmp"));

  data::LmdbSource source(t.db);
  EXPECT_EQ(source.classes(), (std::vector<std::string>{"ant", "bee", "cow"}));
  ASSERT_EQ(source.size(), static_cast<int64_t>(t.expected.size()));
  data::Sample sample;
  for (size_t i = 0; i < t.expected.size(); ++i) {
    source.get(static_cast<int64_t>(i), sample);
    EXPECT_EQ(to_string(sample.bytes), read_file(t.src / t.expected[i].first)) << i;
    EXPECT_EQ(sample.label, t.expected[i].second) << i;
  }
  // The same samples as the loader's own view of the folder, index by index.
  const data::FolderSource folder(t.src);
  ASSERT_EQ(folder.size(), source.size());
  EXPECT_EQ(folder.classes(), source.classes());
  data::Sample from_folder;
  for (int64_t i = 0; i < folder.size(); ++i) {
    folder.get(i, from_folder);
    source.get(i, sample);
    EXPECT_EQ(from_folder.bytes, sample.bytes) << i;
    EXPECT_EQ(from_folder.label, sample.label) << i;
  }
  const auto& meta = source.metadata();
  EXPECT_EQ(meta.source, fs::absolute(t.src).lexically_normal().string());
  EXPECT_EQ(meta.options["max_size"], 0);
  EXPECT_TRUE(meta.skipped.empty());
  EXPECT_EQ(run_faster(t.args()).exit_code, 1);  // never overwrites

  const RunResult v = run_faster("pack --verify " + quoted(t.db));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("6 records (metadata: 6), 3 classes"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find(": OK"), std::string::npos) << v.output;
}

// A root whose train/ and val/ are LMDBs opens each split as one (`faster load ROOT [--val]`).
TEST(Pack, ARootOfDatabasesOpensEachSplit) {
  PackTree t;
  const fs::path root = t.tmp / "root";
  fs::create_directory(root);
  for (const char* split : {"train", "val"}) {
    const RunResult r =
        run_faster("pack --src " + quoted(t.src) + " --out " + quoted(root / split));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  for (const bool val : {false, true}) {
    std::string note;
    const auto source = data::open_source(root, val, &note);
    EXPECT_NE(dynamic_cast<const data::LmdbSource*>(source.get()), nullptr) << val;
    EXPECT_EQ(source->size(), 6) << val;
    EXPECT_EQ(note, "using " + (root / (val ? "val" : "train")).string());
  }
}

TEST(Pack, DownscalesOnTheWayInAndGrowsTheMap) {
  PackTree t;
  tools::PackOptions o;
  o.src = t.src;
  o.out = t.db;
  o.max_size = 64;
  o.workers = 2;
  o.initial_map_size = 8 * 1024;  // two pages, less than the data: the writer must grow it
  o.progress = false;
  const tools::PackSummary s = tools::pack_folder(o);
  EXPECT_EQ(s.packed, 6);
  EXPECT_EQ(s.downscaled, 6);
  EXPECT_GT(s.map_growths, 0);
  data::LmdbSource source(t.db);
  EXPECT_EQ(source.metadata().options["max_size"], 64);
  data::JpegDecoder decoder;
  for (int64_t i = 0; i < source.size(); ++i) {
    const auto r = source.view(i);
    const auto& info = decoder.open(r.data, r.size);
    EXPECT_EQ(std::min(info.width, info.height), 64) << i;
  }
  EXPECT_TRUE(tools::verify_database(t.db, 2, false).ok());
}

TEST(Pack, BadImagesAreLeftOutAndListed) {
  PackTree t;
  write_file(t.src / "bee/0-empty.JPEG", "");
  const RunResult r = run_faster(t.args());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("6 packed (0 downscaled), 1 bad (left out)"), std::string::npos)
      << r.output;
  data::LmdbSource source(t.db);
  EXPECT_EQ(source.size(), 6);
  ASSERT_EQ(source.metadata().skipped.size(), 1u);
  EXPECT_EQ(source.metadata().skipped[0]["path"], "bee/0-empty.JPEG");
  EXPECT_EQ(source.label(3), 1);  // labels still follow the class folders
  // Nothing but bad images: no database of nothing (it would fail later, in whatever read it).
  const fs::path bad = t.tmp / "bad", none = t.tmp / "none";
  fs::create_directories(bad / "a");
  fs::create_directories(bad / "b");
  write_file(bad / "a/1.jpg", "not a jpeg");
  write_file(bad / "b/2.jpg", "");
  const RunResult all_bad = run_faster("pack --src " + quoted(bad) + " --out " + quoted(none));
  EXPECT_EQ(all_bad.exit_code, 1) << all_bad.output;
  EXPECT_NE(all_bad.output.find("every image of " + bad.string() + " is bad (2): nothing packed"),
            std::string::npos)
      << all_bad.output;
  EXPECT_FALSE(fs::exists(none));
  EXPECT_FALSE(fs::exists(t.tmp / ".none.faster-tmp"));
}

TEST(Pack, BadArgumentsAndFailedWritesLeaveNoDatabase) {
  PackTree t;
  tools::PackOptions o;
  o.src = t.tmp / "none";
  o.out = t.db;
  EXPECT_THROW(tools::pack_folder(o), Error);
  o.src = t.src;
  o.out = t.src / "db";  // inside the source
  EXPECT_THROW(tools::pack_folder(o), Error);
  const RunResult no_args = run_faster("pack");
  EXPECT_EQ(no_args.exit_code, 2);  // a usage error (docs/exit_codes.md)
  EXPECT_NE(no_args.output.find("needs --src DIR and --out DB"), std::string::npos);
  const RunResult not_db = run_faster("pack --verify " + quoted(t.src));
  EXPECT_EQ(not_db.exit_code, 1);
  EXPECT_NE(not_db.output.find("not an LMDB database"), std::string::npos) << not_db.output;
  write_file(t.tmp / "junk.mdb", std::string(100000, 'j'));
  EXPECT_EQ(run_faster("pack --verify " + quoted(t.tmp / "junk.mdb")).exit_code, 1);
  // A dataset's root (train/ and val/ of class folders) for --src: two classes, "train" and
  // "val", once; refused, naming the split to give instead.
  fs::create_directories(t.tmp / "root");
  fs::create_directory_symlink(t.src, t.tmp / "root" / "train");
  fs::create_directory_symlink(t.src, t.tmp / "root" / "val");
  const RunResult root =
      run_faster("pack --src " + quoted(t.tmp / "root") + " --out " + quoted(t.tmp / "root.lmdb"));
  EXPECT_EQ(root.exit_code, 1) << root.output;
  EXPECT_NE(root.output.find("is a dataset's root (train/, val/ of class folders)"),
            std::string::npos)
      << root.output;
  EXPECT_NE(root.output.find("give one split, " + (t.tmp / "root" / "train").string()),
            std::string::npos)
      << root.output;
  EXPECT_FALSE(fs::exists(t.tmp / "root.lmdb"));

  // Writes fail part-way (a file size limit, as a full disk would; faster ignores SIGXFSZ itself,
  // so the write fails rather than the process dying): nothing under --out.
  const RunResult limited =
      run_shell("bash -c \"ulimit -f 16; " + std::string(FASTER_BIN) + " " + t.args() + "\"");
  EXPECT_EQ(limited.exit_code, 1) << limited.output;
  EXPECT_NE(
      limited.output.find("faster: error: cannot write " + (t.tmp / ".db.faster-tmp").string() +
                          "/data.mdb: the file size limit (ulimit -f) of 16384 bytes"),
      std::string::npos)
      << limited.output;
  EXPECT_FALSE(fs::exists(t.db));
  EXPECT_FALSE(fs::exists(t.tmp / ".db.faster-tmp"));
  // A temporary left by a killed pack is cleared by the next one.
  fs::create_directories(t.tmp / ".db.faster-tmp");
  write_file(t.tmp / ".db.faster-tmp/data.mdb", "partial");
  EXPECT_EQ(run_faster(t.args()).exit_code, 0);
}

// A real full disk: a 512 KiB tmpfs mounted in a mount namespace of its own (needs root, as in
// CI; skipped where it cannot mount).  LMDB reports the short write as "Input/output error"; pack
// must say the disk is full and where, and leave nothing on it.
TEST(Pack, FullDiskSaysSoAndWhereAndLeavesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  TempDir tmp;
  for (int i = 0; i < 12; ++i)
    write_jpeg(tmp / "src", "c" + std::to_string(i % 2) + "/" + std::to_string(i) + ".jpg", 640,
               480, 95);
  const fs::path mnt = tmp / "mnt";
  fs::create_directories(mnt);
  const RunResult r =
      run_shell("unshare --mount --propagation private sh -c \"mount -t tmpfs -o size=512k tmpfs " +
                quoted(mnt) + " || { echo MOUNT_FAILED; exit 0; }; FASTER_PROGRESS=plain " +
                FASTER_BIN + " pack --src " + quoted(tmp / "src") + " --out " + quoted(mnt / "db") +
                "; echo exit=\\$?; ls -A " + quoted(mnt) + "\"");
  if (r.output.find("MOUNT_FAILED") != std::string::npos || r.exit_code != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here: " << r.output;
  EXPECT_NE(r.output.find("faster: error: cannot write " + (mnt / ".db.faster-tmp").string() +
                          "/data.mdb: no space left on the device ("),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("free on the file system of " + mnt.string()), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Input/output error"), std::string::npos) << r.output;
  // Nothing is listed after the exit code: the temporary database was removed.
  const size_t at = r.output.find("exit=1\n");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.substr(at), "exit=1\n") << r.output;
}

// kill -9 early, with the temporary database just created; in the middle, half the images read;
// late, all but the last large one read; and while committing, every image read and the records
// being written (a commit that ends before the kill lands is no failure).  Each re-run starts over
// and clears what the last left; a Ctrl-C cleans up itself; a sixth finishes.  After every kill
// --out holds nothing, or a database that verifies whole if the kill came after the rename; the
// last run's counts add up,
// --verify passes with a record per good image, and they are those of a run never interrupted.
TEST(Pack, RunsKilledEarlyMiddleLateAndCommittingLeaveNothingHalfDone) {
  TempDir tmp;
  const InterruptTree tree(tmp / "src");
  const fs::path db = tmp / "db", temp = tmp / ".db.faster-tmp";
  constexpr int kGood = InterruptTree::kLarge + InterruptTree::kSmall;
  const std::string cmd = "env FASTER_PROGRESS=plain " + std::string(FASTER_BIN) + " pack --src " +
                          quoted(tmp / "src") + " --out " + quoted(db) + " --max-size " +
                          std::to_string(InterruptTree::kMaxSize) + " --workers 2";
  const auto reading = [](int64_t bytes) {
    return [bytes](pid_t pid) { return bytes_read(pid) >= bytes; };
  };
  const auto committing = [&](pid_t pid) {
    std::error_code ec;
    return bytes_read(pid) >= tree.bytes &&
           (fs::file_size(temp / "data.mdb", ec) > 2 * 4096 || fs::exists(db));  // past the metas
  };
  const int64_t last = static_cast<int64_t>(tree.large.size());
  struct Kill {
    std::string when;
    std::function<bool(pid_t)> ready;
  };
  for (const Kill& k : {Kill{"early", [&](pid_t) { return fs::exists(temp / "data.mdb"); }},
                        Kill{"in the middle", reading(tree.bytes / 2)},
                        Kill{"late", reading(tree.bytes - last)}, Kill{"committing", committing}}) {
    SCOPED_TRACE("killed " + k.when);
    const bool killed = kill_when(cmd, tmp / "log", k.ready);
    if (k.when != "committing") ASSERT_TRUE(killed) << read_file(tmp / "log");
    if (!fs::exists(db)) continue;
    const tools::VerifyReport whole = tools::verify_database(db, 1, false);
    EXPECT_TRUE(whole.ok());
    EXPECT_EQ(whole.records, kGood);
    tools::remove_tree(db);  // so that the next run packs again
  }
  // Ctrl-C in the middle: the pack says so and removes its temporary database itself.
  const int code = signal_when(cmd, tmp / "log", reading(tree.bytes / 2), SIGINT);
  const std::string interrupted = read_file(tmp / "log");
  EXPECT_EQ(code, 130) << interrupted;
  EXPECT_NE(interrupted.find("faster: error: interrupted (SIGINT) after "), std::string::npos)
      << interrupted;
  EXPECT_NE(interrupted.find("pack starts over when run again"), std::string::npos) << interrupted;
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(db));

  const RunResult r = run_shell(cmd);
  EXPECT_EQ(r.exit_code, 3) << r.output;  // packed, two bad images left out
  long long files = -1, classes = -1, packed = -1, downscaled = -1, bad = -1;
  const size_t at = r.output.find("pack: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  ASSERT_EQ(std::sscanf(r.output.c_str() + at,
                        "pack: %lld images, %lld classes into %*s in %*s (%*s img/s): %lld packed "
                        "(%lld downscaled), %lld bad",
                        &files, &classes, &packed, &downscaled, &bad),
            5)
      << r.output;
  EXPECT_EQ(files, InterruptTree::kImages);
  EXPECT_EQ(classes, 4);
  EXPECT_EQ(packed, kGood);
  EXPECT_EQ(downscaled, InterruptTree::kLarge);
  EXPECT_EQ(packed + bad, files);
  EXPECT_FALSE(fs::exists(temp));
  const RunResult v = run_faster("pack --verify " + quoted(db));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  const std::string good = std::to_string(kGood);
  EXPECT_NE(v.output.find(good + " records (metadata: " + good + "), 4 classes"), std::string::npos)
      << v.output;

  tools::PackOptions o;
  o.src = tmp / "src";
  o.out = tmp / "reference";
  o.max_size = InterruptTree::kMaxSize;
  o.progress = false;
  tools::pack_folder(o);
  const data::LmdbSource packed_db(db), reference(o.out);
  ASSERT_EQ(packed_db.size(), reference.size());
  data::Sample a, b;
  for (int64_t i = 0; i < reference.size(); ++i) {
    packed_db.get(i, a);
    reference.get(i, b);
    EXPECT_TRUE(a.bytes == b.bytes && a.label == b.label) << "record " << i;
  }
}

// Opens the packed database for writing, as damage by another program would.
void damage(const fs::path& db, const std::function<void(const data::LmdbTxn&)>& edit) {
  data::LmdbEnv env = data::LmdbEnv::create(db, 64 << 20);
  data::LmdbTxn txn(env, false);
  edit(txn);
  txn.commit();
}

// A label is outside the checksum: changed in place, the record still decodes.  The metadata's
// class counts fix every record's label, so a change even at a class boundary (record 2, the last
// ant, made a bee: labels still in order) is found, as is one out of order (record 0).
TEST(Pack, VerifyFindsAChangedLabel) {
  PackTree t;
  ASSERT_EQ(run_faster(t.args()).exit_code, 0);
  ASSERT_TRUE(tools::verify_database(t.db, 1, false).ok());
  const auto set_label = [&](int index, int label) {
    damage(t.db, [&](const data::LmdbTxn& txn) {
      const auto key = fmt::record_key(index);
      MDB_val k{key.view().size(), const_cast<char*>(key.text)}, v;
      FASTER_CHECK_LMDB(mdb_get(txn.get(), txn.dbi(), &k, &v), "test");
      std::string value(static_cast<const char*>(v.mv_data), v.mv_size);
      const auto record = fmt::read_record(value.data(), value.size());
      fmt::write_record_header(label, record->crc, reinterpret_cast<uint8_t*>(value.data()));
      MDB_val nv{value.size(), value.data()};
      FASTER_CHECK_LMDB(mdb_put(txn.get(), txn.dbi(), &k, &nv, 0), "test");
    });
  };
  for (const auto& [index, label] : {std::pair{2, 1}, std::pair{0, 2}}) {
    SCOPED_TRACE(index);
    set_label(index, label);
    const tools::VerifyReport report = tools::verify_database(t.db, 1, false);
    EXPECT_EQ(report.damaged, 1);
    ASSERT_EQ(report.problems.size(), 1u);
    EXPECT_NE(report.problems[0].find("key " + std::string(fmt::record_key(index).view()) +
                                      ": label " + std::to_string(label) +
                                      ", but the metadata's class counts make it a record of "
                                      "class 0"),
              std::string::npos)
        << report.problems[0];
    set_label(index, 0);  // an ant again
  }
  EXPECT_TRUE(tools::verify_database(t.db, 1, false).ok());
  // A database from before class_counts: labels must not decrease, and the record out of order
  // is the one named (not every later record of a lower class).
  damage(t.db, [](const data::LmdbTxn& txn) {
    MDB_val v;
    ASSERT_TRUE(txn.find(fmt::kMetaKey, v));
    fmt::Metadata m = fmt::decode_metadata(data::to_view(v), "db");
    m.class_counts.clear();
    const std::string meta = fmt::encode_metadata(m);
    MDB_val k{fmt::kMetaKey.size(), const_cast<char*>(fmt::kMetaKey.data())};
    MDB_val nv{meta.size(), const_cast<char*>(meta.data())};
    FASTER_CHECK_LMDB(mdb_put(txn.get(), txn.dbi(), &k, &nv, 0), "test");
  });
  set_label(0, 2);
  const tools::VerifyReport old = tools::verify_database(t.db, 1, false);
  EXPECT_EQ(old.damaged, 1);
  ASSERT_EQ(old.problems.size(), 1u);
  EXPECT_NE(old.problems[0].find("key 0000000000: label 2 between labels 2 and 0"),
            std::string::npos)
      << old.problems[0];
}

TEST(Pack, VerifyFindsAFlippedByteAMissingRecordAndATruncatedFile) {
  PackTree t;
  ASSERT_EQ(run_faster(t.args()).exit_code, 0);
  damage(t.db, [](const data::LmdbTxn& txn) {
    const auto key = fmt::record_key(2);
    MDB_val k{key.view().size(), const_cast<char*>(key.text)}, v;
    FASTER_CHECK_LMDB(mdb_get(txn.get(), txn.dbi(), &k, &v), "test");
    std::string value(static_cast<const char*>(v.mv_data), v.mv_size);
    value[value.size() / 2] ^= 0x10;  // one bit in the entropy-coded data
    MDB_val nv{value.size(), value.data()};
    FASTER_CHECK_LMDB(mdb_put(txn.get(), txn.dbi(), &k, &nv, 0), "test");
  });
  const RunResult r = run_faster("pack --verify " + quoted(t.db));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("DAMAGED (1 bad records)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("key 0000000002: checksum mismatch"), std::string::npos) << r.output;

  damage(t.db, [](const data::LmdbTxn& txn) {
    const auto key = fmt::record_key(4);
    MDB_val k{key.view().size(), const_cast<char*>(key.text)};
    FASTER_CHECK_LMDB(mdb_del(txn.get(), txn.dbi(), &k, nullptr), "test");
  });
  const tools::VerifyReport report = tools::verify_database(t.db, 1, false);
  EXPECT_FALSE(report.ok());
  const std::string all = [&] {
    std::string s;
    for (const auto& p : report.problems) s += p + "\n";
    return s;
  }();
  EXPECT_NE(all.find("record keys 0000000004 to 0000000004 are missing"), std::string::npos) << all;
  EXPECT_NE(all.find("metadata says 6 records, the database holds 5"), std::string::npos) << all;

  fs::remove(t.db / "lock.mdb");
  fs::resize_file(t.db / "data.mdb", fs::file_size(t.db / "data.mdb") / 2);
  const RunResult cut = run_faster("pack --verify " + quoted(t.db));
  EXPECT_EQ(cut.exit_code, 1) << cut.output;
  EXPECT_NE(cut.output.find("truncated"), std::string::npos) << cut.output;
}

}  // namespace
}  // namespace faster::test
