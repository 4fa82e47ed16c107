// LMDB layout implementation: keys, record headers, CRC-32 and the metadata JSON.
#include "faster/data/sources/lmdb_format.h"

#include <array>
#include <cstring>

#include "faster/core/error.h"

namespace faster::data::lmdb_format {
namespace {

void put_u32le(uint32_t v, uint8_t* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t get_u32le(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// Slicing-by-8 tables: eight bytes per step keeps the checksum well above disk speed
// (a byte-at-a-time table would cost ~0.3 ms per 100 KB image when packing and verifying).
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

CrcTables make_crc_tables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (int s = 1; s < 8; ++s)
    for (int i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}

template <typename T>
T json_field(const nlohmann::json& j, const char* name, const std::string& where) {
  if (!j.contains(name)) FASTER_THROW(where, ": metadata record has no '", name, "' field");
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    FASTER_THROW(where, ": metadata field '", name, "' has the wrong type");
  }
}

}  // namespace

Key record_key(int64_t index) {
  FASTER_CHECK(index >= 0 && index < 10'000'000'000LL, "record index out of range: ", index);
  Key key;
  for (int i = kKeyDigits - 1; i >= 0; --i, index /= 10) key.text[i] = char('0' + index % 10);
  return key;
}

std::optional<int64_t> parse_record_key(std::string_view key) {
  if (key.size() != kKeyDigits) return std::nullopt;
  int64_t index = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + (c - '0');
  }
  return index;
}

void write_record_header(int32_t label, uint32_t crc, uint8_t* header) {
  put_u32le(static_cast<uint32_t>(label), header);
  put_u32le(crc, header + 4);
}

std::optional<RecordView> read_record(const void* value, size_t size) {
  if (size < kRecordHeaderBytes) return std::nullopt;
  const auto* p = static_cast<const uint8_t*>(value);
  return RecordView{static_cast<int32_t>(get_u32le(p)), get_u32le(p + 4), p + kRecordHeaderBytes,
                    size - kRecordHeaderBytes};
}

bool record_intact(const RecordView& record) {
  return crc32(record.data, record.size) == record.crc;
}

uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc) {
  static const CrcTables t = make_crc_tables();
  crc = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    const uint32_t lo = crc ^ get_u32le(p), hi = get_u32le(p + 4);
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; n > 0; --n, ++p) crc = t[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string encode_metadata(const Metadata& m) {
  nlohmann::json j = {
      {"format", kFormatName},        {"version", m.version}, {"count", m.count},
      {"classes", m.classes},         {"source", m.source},   {"options", m.options},
      {"image_bytes", m.image_bytes}, {"created", m.created}, {"writer", m.writer},
      {"skipped", m.skipped}};
  if (!m.class_counts.empty()) j["class_counts"] = m.class_counts;
  return j.dump(1);
}

Metadata decode_metadata(std::string_view value, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(value.begin(), value.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) FASTER_THROW(where, ": metadata record is not JSON");
  if (json_field<std::string>(j, "format", where) != kFormatName)
    FASTER_THROW(where, ": metadata format is not '", kFormatName, "'");
  Metadata m;
  m.version = json_field<int>(j, "version", where);
  if (m.version < 1 || m.version > kVersion)
    throw Error(
        detail::concat(where, ": layout version ", m.version, ", this build reads 1..", kVersion),
        "repack it with this build of faster, or use the faster that wrote it");
  m.count = json_field<int64_t>(j, "count", where);
  m.classes = json_field<std::vector<std::string>>(j, "classes", where);
  if (m.count < 0) FASTER_THROW(where, ": metadata count is negative");
  m.source = j.value("source", "");
  m.options = j.value("options", nlohmann::json::object());
  m.image_bytes = j.value("image_bytes", int64_t{0});
  m.created = j.value("created", "");
  m.writer = j.value("writer", "");
  m.skipped = j.value("skipped", nlohmann::json::array());
  if (j.contains("class_counts")) {
    m.class_counts = json_field<std::vector<int64_t>>(j, "class_counts", where);
    int64_t sum = 0;
    for (const int64_t c : m.class_counts) sum += c < 0 ? m.count + 1 : c;
    if (m.class_counts.size() != m.classes.size() || sum != m.count)
      FASTER_THROW(where, ": metadata class_counts (", m.class_counts.size(),
                   " classes) do not add up to its ", m.classes.size(), " classes and ", m.count,
                   " records");
  }
  return m;
}

}  // namespace faster::data::lmdb_format
