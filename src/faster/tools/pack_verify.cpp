// `faster pack --verify`: re-reads a packed database and lists everything that does not hold up.
// It walks the raw keys itself instead of opening an LmdbSource, which stops at the first problem;
// damaged LMDB pages end the check at once (LMDB would crash on them).
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <optional>

#include "faster/core/error.h"
#include "faster/core/parallel.h"
#include "faster/core/progress.h"
#include "faster/data/decode/jpeg_decoder.h"
#include "faster/data/decode/png_codec.h"
#include "faster/data/sources/lmdb_check.h"
#include "faster/data/sources/lmdb_env.h"
#include "faster/data/sources/lmdb_format.h"
#include "faster/tools/pack.h"

namespace faster::tools {
namespace fs = std::filesystem;
namespace fmt = data::lmdb_format;

namespace {

constexpr size_t kMaxProblems = 20;  // listed; the rest are only counted

struct Findings {
  std::mutex mutex;
  VerifyReport report;
  void add(const std::string& problem, bool damaged_record) {
    std::lock_guard<std::mutex> lock(mutex);
    if (report.problems.size() < kMaxProblems) report.problems.push_back(problem);
    if (damaged_record) ++report.damaged;
  }
};

std::optional<fmt::Metadata> read_metadata(const data::LmdbTxn& txn, const std::string& where,
                                           Findings& f) {
  MDB_val v;
  if (!txn.find(fmt::kMetaKey, v)) {
    f.add(detail::concat("no metadata record (key '", fmt::kMetaKey, "')"), false);
    return std::nullopt;
  }
  try {
    return fmt::decode_metadata(data::to_view(v), where);
  } catch (const Error& e) {
    f.add(e.what(), false);
    return std::nullopt;
  }
}

struct Record {
  int64_t index;
  MDB_val value;
};

// Keys must be exactly 0..n-1 in order, plus the metadata; gaps and foreign keys are reported.
std::vector<Record> walk_records(const data::LmdbTxn& txn, const std::string& where, Findings& f) {
  std::vector<Record> records;
  data::LmdbCursor cursor(txn, where);
  MDB_val key, value;
  int64_t expected = 0;
  for (bool ok = cursor.get(key, value, MDB_FIRST); ok; ok = cursor.get(key, value, MDB_NEXT)) {
    const auto index = fmt::parse_record_key(data::to_view(key));
    if (!index) {
      if (data::to_view(key) != fmt::kMetaKey)
        f.add(detail::concat("unexpected key '", data::to_view(key), "'"), false);
      continue;
    }
    if (*index != expected)
      f.add(detail::concat("record keys ", fmt::record_key(expected).view(), " to ",
                           fmt::record_key(*index - 1).view(), " are missing"),
            false);
    expected = *index + 1;
    records.push_back({*index, value});
    f.report.image_bytes += static_cast<int64_t>(value.mv_size);
  }
  return records;
}

// A worker's decoders: a record is a JPEG or a PNG (packed from a tree of either).
struct Decoders {
  data::JpegDecoder jpeg;
  data::PngDecoder png;
};

void check_record(const Record& rec, int64_t classes, Decoders& decoders, data::ImageBuffer& image,
                  Findings& f) {
  const auto key = fmt::record_key(rec.index);
  const auto record = fmt::read_record(rec.value.mv_data, rec.value.mv_size);
  if (!record) return f.add(detail::concat("key ", key.view(), ": record too short"), true);
  if (!fmt::record_intact(*record))
    return f.add(detail::concat("key ", key.view(), ": checksum mismatch (damaged image bytes)"),
                 true);
  if (record->label < 0 || (classes >= 0 && record->label >= classes))
    return f.add(detail::concat("key ", key.view(), ": label ", record->label, " is not a class"),
                 true);
  try {
    // At 1/8 scale the decoder still reads every entropy-coded bit, which is where damage shows.
    if (data::is_png(record->data, record->size))
      decoders.png.decode(record->data, record->size, image);
    else
      decoders.jpeg.decode_all(record->data, record->size, image, 1, 1);
  } catch (const Error& e) {
    f.add(detail::concat("key ", key.view(), ": ", e.what()), true);
  }
}

// Records are in class order: with the metadata's class_counts each record's label is known
// (label k for the next class_counts[k] records); without them (older databases), labels never
// decrease, and a record whose label differs from both neighbours where the order breaks is the
// one named.  A label changed in place (it is outside the checksum) breaks one or the other.
// Records failing check_record's own checks (checksum, label range) are left to it.
void check_label_order(const std::vector<Record>& records, int64_t classes,
                       const std::vector<int64_t>& class_counts, Findings& f) {
  std::vector<int64_t> labels;  // -1: reported by check_record
  for (const Record& rec : records) {
    const auto record = fmt::read_record(rec.value.mv_data, rec.value.mv_size);
    const bool usable = record && fmt::record_intact(*record) && record->label >= 0 &&
                        (classes < 0 || record->label < classes);
    labels.push_back(usable ? record->label : -1);
  }
  const auto name = [&](size_t i) { return fmt::record_key(records[i].index); };
  if (!class_counts.empty()) {
    size_t i = 0;
    for (size_t cls = 0; cls < class_counts.size(); ++cls)
      for (int64_t k = 0; k < class_counts[cls] && i < labels.size(); ++k, ++i)
        if (labels[i] >= 0 && labels[i] != static_cast<int64_t>(cls))
          f.add(detail::concat("key ", name(i).view(), ": label ", labels[i],
                               ", but the metadata's class counts make it a record of class ", cls),
                true);
    return;
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0) continue;
    const int64_t before = i > 0 && labels[i - 1] >= 0 ? labels[i - 1] : labels[i];
    const int64_t after = i + 1 < labels.size() && labels[i + 1] >= 0 ? labels[i + 1] : labels[i];
    const bool alone = before != labels[i] && after != labels[i];
    const bool at_edge =
        (i == 0 && after != labels[i]) || (i + 1 == labels.size() && before != labels[i]);
    if ((alone || at_edge) && (before > labels[i] || labels[i] > after))
      f.add(detail::concat("key ", name(i).view(), ": label ", labels[i], " between labels ",
                           before, " and ", after, " (records are in class order)"),
            true);
  }
}

}  // namespace

VerifyReport verify_database(const fs::path& db, int workers, bool progress) {
  check_workers(workers);
  std::optional<data::LmdbEnv> opened;
  try {
    opened.emplace(data::LmdbEnv::open_read_only(db));
  } catch (const data::LmdbDamage& e) {  // LMDB cannot be trusted with anything in it
    VerifyReport r;
    r.damaged_pages = e.damage();
    return r;
  }
  const data::LmdbEnv& env = *opened;
  data::LmdbTxn txn(env, true);
  Findings f;
  const auto meta = read_metadata(txn, env.path(), f);
  const std::vector<Record> records = walk_records(txn, env.path(), f);
  VerifyReport& r = f.report;
  r.records = static_cast<int64_t>(records.size());
  r.expected = meta ? meta->count : -1;
  r.classes = meta ? static_cast<int64_t>(meta->classes.size()) : -1;
  if (meta && meta->count != r.records)
    f.add(detail::concat("metadata says ", meta->count, " records, the database holds ", r.records),
          false);

  // With records missing, the counts cannot place the rest (reported above).
  if (!meta || meta->count == r.records)
    check_label_order(records, r.classes, meta ? meta->class_counts : std::vector<int64_t>{}, f);
  workers = worker_count(workers, r.records);
  std::vector<Decoders> decoders(static_cast<size_t>(workers));
  std::vector<data::ImageBuffer> images(static_cast<size_t>(workers));
  std::optional<Progress> bar;
  if (progress) bar.emplace("verify", r.records, "img");
  parallel_for(workers, r.records, [&](int w, int64_t i) {
    check_record(records[static_cast<size_t>(i)], r.classes, decoders[static_cast<size_t>(w)],
                 images[static_cast<size_t>(w)], f);
    if (bar) bar->add();
  });
  return r;
}

std::string format_report(const VerifyReport& r, const fs::path& db) {
  if (!r.damaged_pages.empty())
    return detail::concat("verify ", db.string(), ": DAMAGED: ", r.damaged_pages, "\n");
  char line[512];
  std::snprintf(line, sizeof line, "verify %s: %lld records", db.string().c_str(),
                static_cast<long long>(r.records));
  std::string out = line;
  // No metadata record (an unfinished database): no count or classes to state.
  if (r.expected >= 0)
    out += detail::concat(" (metadata: ", r.expected, "), ", r.classes, " classes");
  else
    out += " (no metadata record)";
  std::snprintf(line, sizeof line, ", %.1f MB", r.image_bytes / 1e6);
  out += line;
  if (r.ok()) return out + ": OK\n";
  out += detail::concat(": DAMAGED (", r.damaged, " bad records)\n");
  for (const auto& p : r.problems) out += "  " + p + "\n";
  if (r.problems.size() == kMaxProblems) out += "  (only the first problems are listed)\n";
  return out;
}

}  // namespace faster::tools
