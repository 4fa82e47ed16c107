// The LMDB layout's encoders against fixed values: CRC-32 check value, key order, record headers,
// metadata validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "faster/core/error.h"
#include "faster/data/sources/lmdb_format.h"

namespace faster::data::lmdb_format {
namespace {

const uint8_t* bytes_of(const std::string& s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

TEST(LmdbFormat, Crc32MatchesTheZlibCheckValue) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32(bytes_of(check), check.size()), 0xCBF43926u);  // the CRC-32 catalogue's value
  EXPECT_EQ(crc32(nullptr, 0), 0u);
  std::string long_text(1000, 'x');
  for (size_t i = 0; i < long_text.size(); ++i) long_text[i] = static_cast<char>(i * 7);
  // Chained over two parts (one not a multiple of 8) equals one pass.
  const uint32_t part = crc32(bytes_of(long_text), 333);
  EXPECT_EQ(crc32(bytes_of(long_text) + 333, long_text.size() - 333, part),
            crc32(bytes_of(long_text), long_text.size()));
}

TEST(LmdbFormat, RecordKeysSortInIndexOrderAndParseBack) {
  const std::vector<int64_t> indices = {0, 1, 9, 10, 99, 100, 123456, 9'999'999'999};
  std::vector<std::string> keys;
  for (int64_t i : indices) {
    keys.push_back(std::string(record_key(i).view()));
    EXPECT_EQ(keys.back().size(), size_t(kKeyDigits));
    EXPECT_EQ(parse_record_key(keys.back()), i);
  }
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_LT(keys.back(), std::string(kMetaKey));  // metadata is appended after every record
  EXPECT_EQ(parse_record_key(kMetaKey), std::nullopt);
  EXPECT_EQ(parse_record_key("12"), std::nullopt);
  EXPECT_EQ(parse_record_key("00000000x1"), std::nullopt);
  EXPECT_THROW(record_key(-1), Error);
}

TEST(LmdbFormat, RecordHeaderRoundTripsAndChecksumCatchesDamage) {
  const std::string image = "\xFF\xD8 pretend jpeg bytes \xFF\xD9";
  std::vector<uint8_t> value(kRecordHeaderBytes + image.size());
  write_record_header(123456, crc32(bytes_of(image), image.size()), value.data());
  std::copy(image.begin(), image.end(), value.begin() + kRecordHeaderBytes);
  EXPECT_EQ(value[0], 0x40);  // 123456 = 0x0001E240, little-endian
  EXPECT_EQ(value[1], 0xE2);

  auto record = read_record(value.data(), value.size());
  ASSERT_TRUE(record);
  EXPECT_EQ(record->label, 123456);
  EXPECT_EQ(record->size, image.size());
  EXPECT_EQ(record->data, value.data() + kRecordHeaderBytes);
  EXPECT_TRUE(record_intact(*record));
  value[kRecordHeaderBytes + 5] ^= 0x01;
  EXPECT_FALSE(record_intact(*read_record(value.data(), value.size())));
  EXPECT_FALSE(read_record(value.data(), kRecordHeaderBytes - 1));
}

TEST(LmdbFormat, MetadataRoundTripsAndIsValidated) {
  Metadata m;
  m.count = 3;
  m.classes = {"cat", "dog"};
  m.source = "/data/train";
  m.options = {{"max_size", 160}, {"quality", 90}};
  m.image_bytes = 1234;
  m.skipped = nlohmann::json::array({{{"path", "cat/bad.JPEG"}, {"reason", "truncated"}}});
  m.class_counts = {1, 2};
  const Metadata back = decode_metadata(encode_metadata(m), "db");
  EXPECT_EQ(back.class_counts, m.class_counts);
  EXPECT_EQ(back.count, 3);
  EXPECT_EQ(back.classes, m.classes);
  EXPECT_EQ(back.source, m.source);
  EXPECT_EQ(back.options, m.options);
  EXPECT_EQ(back.image_bytes, 1234);
  EXPECT_EQ(back.skipped, m.skipped);

  const auto message = [](const std::string& value) {
    try {
      decode_metadata(value, "the/db");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("not json").find("the/db: metadata record is not JSON"), std::string::npos);
  EXPECT_NE(message(R"({"format":"faster-lmdb","version":1,"count":3,"classes":["a","b"],)"
                    R"("class_counts":[1,1]})")
                .find("class_counts (2 classes) do not add up to its 2 classes and 3 records"),
            std::string::npos);
  EXPECT_NE(message(R"({"format":"other","version":1,"count":1,"classes":[]})").find("format"),
            std::string::npos);
  EXPECT_NE(message(R"({"format":"faster-lmdb","version":99,"count":1,"classes":[]})")
                .find("layout version 99"),
            std::string::npos);
  EXPECT_NE(message(R"({"format":"faster-lmdb","version":1,"classes":[]})").find("'count'"),
            std::string::npos);
  EXPECT_NE(message(R"({"format":"faster-lmdb","version":1,"count":"x","classes":[]})")
                .find("wrong type"),
            std::string::npos);
}

}  // namespace
}  // namespace faster::data::lmdb_format
