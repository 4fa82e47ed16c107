// The on-disk layout of faster's LMDB datasets (docs/lmdb_layout.md): record keys, the record
// format (label, checksum, encoded image) and the metadata record.  The pack tool writes it and the
// LMDB source reads it through these functions only, so the two cannot drift apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace faster::data::lmdb_format {

// Bumped whenever a reader of the previous version would misread the new one.
constexpr int kVersion = 1;
constexpr std::string_view kFormatName = "faster-lmdb";
// Sorts after every record key ('_' > '9'), so records and then the metadata can be appended.
constexpr std::string_view kMetaKey = "__meta__";
// Record keys are the index in decimal, zero-padded: ASCII order is index order, mdb_dump is
// legible.
constexpr int kKeyDigits = 10;
// Record value: int32 label, uint32 CRC-32 of the image bytes (both little-endian), image bytes.
constexpr size_t kRecordHeaderBytes = 8;

struct Key {
  char text[kKeyDigits];
  std::string_view view() const { return {text, sizeof text}; }
};
Key record_key(int64_t index);
// The index of a record key, or nullopt for any other key (the metadata, or foreign keys).
std::optional<int64_t> parse_record_key(std::string_view key);

// A record as stored; `data` points into the value it was decoded from.
struct RecordView {
  int32_t label = -1;
  uint32_t crc = 0;
  const uint8_t* data = nullptr;
  size_t size = 0;
};
// Writes the header into `header` (kRecordHeaderBytes bytes); crc = crc32() of the image bytes.
void write_record_header(int32_t label, uint32_t crc, uint8_t* header);
// Splits a stored value; nullopt when it is too short to hold a header.
std::optional<RecordView> read_record(const void* value, size_t size);
// Whether the image bytes still match the checksum written with them.
bool record_intact(const RecordView& record);

// CRC-32 as in zlib, PNG and Python's zlib.crc32 (reflected polynomial 0xEDB88320).
uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0);

struct Metadata {
  int version = kVersion;
  int64_t count = 0;                                  // records 0 .. count-1
  std::vector<std::string> classes;                   // label -> class name
  std::string source;                                 // the folder it was packed from
  nlohmann::json options = nlohmann::json::object();  // how it was packed (max_size, quality)
  int64_t image_bytes = 0;                            // sum of the stored images' sizes
  std::string created;                                // UTC, ISO 8601
  std::string writer;                                 // "faster 0.1.0"
  nlohmann::json skipped = nlohmann::json::array();   // [{path, reason}] left out while packing
  // Records per class, in label order (records are in class order, so these fix every record's
  // label); empty in databases written before it was recorded.
  std::vector<int64_t> class_counts;
};
std::string encode_metadata(const Metadata& meta);
// Parses and validates the metadata value; errors name `where` (the database path).
Metadata decode_metadata(std::string_view value, const std::string& where);

}  // namespace faster::data::lmdb_format
