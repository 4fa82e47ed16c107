// Readers for the small datasets.  Everything read from disk is checked before use: magic numbers,
// dimensions, sizes, counts and label ranges, so a corrupt file ends in an error, never a crash.
#include "faster/data/sources/array_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <new>

#include "faster/core/error.h"
#include "faster/core/text.h"

namespace faster::data {
namespace fs = std::filesystem;

void ArrayDataset::truncate(int64_t count) {
  if (count <= 0 || count >= n) return;
  n = count;
  images.resize(n * image_bytes());
  labels.resize(n);
}

std::vector<uint8_t> read_maybe_gzip(const fs::path& path) {
  // One open for the magic, a gzip file's trailer and a raw file's bytes.
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) FASTER_THROW(path.string(), ": cannot open (", std::strerror(errno), ")");
  const auto file_size = static_cast<size_t>(in.tellg());
  in.seekg(0);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  std::vector<uint8_t> out;
  if (magic[0] == 0x1f && magic[1] == 0x8b) {
    // The trailer's last 4 bytes: the data's size modulo 2^32 (of the last member), a hint that
    // saves growing the buffer (and copying it) a dozen times.  Bounded by deflate's largest
    // ratio and only reserved (pages never written cost nothing), so a corrupt trailer costs no
    // memory the data does not take.
    size_t hint = 0;
    if (file_size >= 18) {
      unsigned char size[4] = {0, 0, 0, 0};
      in.seekg(-4, std::ios::end);
      in.read(reinterpret_cast<char*>(size), 4);
      hint = size_t{size[0]} | size_t{size[1]} << 8 | size_t{size[2]} << 16 | size_t{size[3]} << 24;
      hint = std::min(hint, file_size * 1032);
    }
    in.close();
    std::unique_ptr<gzFile_s, int (*)(gzFile)> gz(gzopen(path.c_str(), "rb"), gzclose);
    if (!gz) FASTER_THROW(path.string(), ": cannot open as gzip");
    gzbuffer(gz.get(), 1 << 20);
    try {
      out.reserve(hint + 1);
    } catch (const std::bad_alloc&) {  // a hint, not a need: a corrupt one must not end the read
    }
    size_t have = 0;
    for (;;) {
      // Within the reservation while the hint holds (its last byte: the read that finds the end).
      constexpr size_t kChunk = size_t{4} << 20;
      const size_t chunk = out.capacity() > have ? std::min(kChunk, out.capacity() - have) : kChunk;
      out.resize(have + chunk);
      const int n = gzread(gz.get(), out.data() + have, static_cast<unsigned>(chunk));
      if (n < 0) {
        int err = 0;
        FASTER_THROW(path.string(), ": corrupt gzip data (", gzerror(gz.get(), &err), ")");
      }
      if (n == 0) break;
      have += static_cast<size_t>(n);
    }
    out.resize(have);
    if (out.capacity() - have > have / 4 + (size_t{1} << 20)) out.shrink_to_fit();  // a lying hint
    // gzread returns 0 both at a clean end and at a truncated stream; only the former is eof-clean.
    int err = 0;
    gzerror(gz.get(), &err);
    if (err != Z_OK && err != Z_STREAM_END) FASTER_THROW(path.string(), ": corrupt gzip data");
    if (!gzeof(gz.get())) FASTER_THROW(path.string(), ": truncated gzip data");
  } else {
    out.resize(file_size);
    in.clear();  // a file shorter than the magic ended the read above
    in.seekg(0);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(file_size));
    if (!in) FASTER_THROW(path.string(), ": read failed");
  }
  return out;
}

namespace {

uint32_t be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

// Parses an idx header: magic 0x0000 08 <ndim>, then ndim big-endian sizes; returns the sizes.
std::vector<uint32_t> idx_header(const std::vector<uint8_t>& d, const fs::path& path, int ndim) {
  if (d.size() < 4) FASTER_THROW(path.string(), ": truncated idx file (", d.size(), " bytes)");
  if (d[0] != 0 || d[1] != 0 || d[2] != 0x08 || d[3] != ndim)
    FASTER_THROW(path.string(), ": bad idx magic (expected uint8 data with ", ndim, " dimensions)");
  if (d.size() < 4 + 4 * size_t(ndim)) FASTER_THROW(path.string(), ": truncated idx header");
  std::vector<uint32_t> dims;
  size_t expected = 1;
  for (int i = 0; i < ndim; ++i) {
    dims.push_back(be32(&d[4 + 4 * i]));
    expected *= dims.back();
  }
  const size_t have = d.size() - 4 - 4 * ndim;
  if (have < expected)
    FASTER_THROW(path.string(), ": truncated idx data (", have, " bytes, header says ", expected,
                 ")");
  if (have > expected)
    FASTER_THROW(path.string(), ": ", have - expected, " bytes after the idx data (header says ",
                 expected, ")");
  return dims;
}

void check_labels(const ArrayDataset& ds, const std::string& where) {
  for (int64_t i = 0; i < ds.n; ++i)
    if (ds.labels[i] < 0 || ds.labels[i] >= ds.classes)
      FASTER_THROW(where, ": label ", ds.labels[i], " of sample ", i, " is out of range [0, ",
                   ds.classes, ")");
}

}  // namespace

ArrayDataset read_idx(const fs::path& images, const fs::path& labels, int classes) {
  auto img = read_maybe_gzip(images);
  auto lab = read_maybe_gzip(labels);
  const auto idim = idx_header(img, images, 3);
  const auto ldim = idx_header(lab, labels, 1);
  if (idim[0] != ldim[0])
    FASTER_THROW(images.string(), ": ", idim[0], " images but ", labels.string(), " has ", ldim[0],
                 " labels");
  if (idim[0] == 0 || idim[1] == 0 || idim[2] == 0 || idim[1] > 4096 || idim[2] > 4096)
    FASTER_THROW(images.string(), ": implausible idx dimensions ", idim[0], "x", idim[1], "x",
                 idim[2]);
  ArrayDataset ds;
  ds.n = idim[0];
  ds.channels = 1;
  ds.height = idim[1];
  ds.width = idim[2];
  ds.images = std::move(img);  // less its header, without a second copy
  ds.images.erase(ds.images.begin(), ds.images.begin() + 16);
  ds.labels.assign(lab.begin() + 8, lab.end());
  // The class count comes from the labels unless the caller bounds it (idx labels are bytes).
  ds.classes = classes > 0
                   ? classes
                   : 1 + static_cast<int>(*std::max_element(ds.labels.begin(), ds.labels.end()));
  check_labels(ds, labels.string());
  return ds;
}

ArrayDataset read_cifar10(const std::vector<fs::path>& batches) {
  constexpr int64_t kRecord = 1 + 3 * 32 * 32;
  ArrayDataset ds;
  ds.channels = 3;
  ds.height = ds.width = 32;
  ds.classes = 10;
  for (const auto& path : batches) {
    const auto d = read_maybe_gzip(path);
    if (d.empty() || d.size() % kRecord != 0)
      FASTER_THROW(path.string(), ": size ", d.size(),
                   " is not a whole number of CIFAR-10 records (", kRecord, " bytes each)");
    const int64_t count = d.size() / kRecord;
    for (int64_t r = 0; r < count; ++r) {
      const uint8_t* rec = d.data() + r * kRecord;
      if (rec[0] >= ds.classes)
        FASTER_THROW(path.string(), ": label ", int(rec[0]), " of record ", r,
                     " is out of range [0, 10)");
      ds.labels.push_back(rec[0]);
      ds.images.insert(ds.images.end(), rec + 1, rec + kRecord);
    }
    ds.n += count;
  }
  return ds;
}

namespace {

fs::path first_existing(const fs::path& dir, const std::string& stem) {
  for (const char* ext : {"", ".gz"})
    if (fs::exists(dir / (stem + ext))) return dir / (stem + ext);
  return {};
}

// `dir` as an absolute path whose last component is the folder's name (a trailing separator
// would leave it empty).
fs::path named_folder(const fs::path& dir) {
  fs::path d = fs::absolute(dir).lexically_normal();
  return d.filename().empty() ? d.parent_path() : d;
}

}  // namespace

bool named_fashion_mnist(const fs::path& dir) {
  const fs::path d = named_folder(dir);
  const auto says = [](const fs::path& p) {
    const std::string name = lower_case(p.filename().string());
    return name.find("fashion") != std::string::npos || name.find("fmnist") != std::string::npos;
  };
  return says(d) || says(d.parent_path());
}

bool is_small_dataset(const fs::path& dir) {
  std::error_code ec;
  return !first_existing(dir, "train-images-idx3-ubyte").empty() ||
         fs::exists(dir / "data_batch_1.bin", ec) ||
         fs::exists(dir / "cifar-10-batches-bin" / "data_batch_1.bin", ec);
}

TrainTest load_small_dataset(const fs::path& dir) {
  if (!fs::exists(dir)) FASTER_NOT_FOUND("dataset ", dir.string(), " does not exist");
  if (!fs::is_directory(dir)) FASTER_THROW(dir.string(), ": not a directory");
  TrainTest tt;
  const auto train_images = first_existing(dir, "train-images-idx3-ubyte");
  if (!train_images.empty()) {
    const auto need = [&](const std::string& stem) {
      auto p = first_existing(dir, stem);
      if (p.empty())
        FASTER_THROW(dir.string(), ": has train-images-idx3-ubyte but no ", stem, "[.gz]");
      return p;
    };
    const auto train_labels = need("train-labels-idx1-ubyte");
    const auto test_images = need("t10k-images-idx3-ubyte");
    const auto test_labels = need("t10k-labels-idx1-ubyte");
    // The test split on a thread of its own while the training split (six times its size) reads.
    auto test = std::async(std::launch::async, read_idx, test_images, test_labels, 0);
    tt.train = read_idx(train_images, train_labels);
    tt.test = test.get();
    tt.format = "idx";
  } else {
    fs::path cifar = fs::exists(dir / "cifar-10-batches-bin") ? dir / "cifar-10-batches-bin" : dir;
    if (!fs::exists(cifar / "data_batch_1.bin"))
      FASTER_THROW(dir.string(),
                   ": no Fashion-MNIST/MNIST idx files (train-images-idx3-ubyte[.gz]) "
                   "and no CIFAR-10 batches (data_batch_1.bin)");
    std::vector<fs::path> train;
    for (int i = 1; i <= 5; ++i) {
      auto p = cifar / ("data_batch_" + std::to_string(i) + ".bin");
      if (!fs::exists(p)) FASTER_THROW(cifar.string(), ": missing ", p.filename().string());
      train.push_back(p);
    }
    if (!fs::exists(cifar / "test_batch.bin"))
      FASTER_THROW(cifar.string(), ": missing test_batch.bin");
    auto test = std::async(std::launch::async, read_cifar10,
                           std::vector<fs::path>{cifar / "test_batch.bin"});
    tt.train = read_cifar10(train);
    tt.test = test.get();
    tt.format = "cifar10";
  }
  tt.train.classes = tt.test.classes = std::max(tt.train.classes, tt.test.classes);
  if (tt.train.classes < 2) FASTER_THROW(dir.string(), ": the labels name fewer than 2 classes");
  const std::string base = tt.format == "idx" ? named_folder(dir).filename().string() : "cifar10";
  tt.train.name = base + "/train";
  tt.test.name = base + "/test";
  tt.train.fashion_mnist = tt.test.fashion_mnist = tt.format == "idx" && named_fashion_mnist(dir);
  if (tt.train.channels != tt.test.channels || tt.train.height != tt.test.height ||
      tt.train.width != tt.test.width)
    FASTER_THROW(dir.string(), ": train and test images have different shapes");
  return tt;
}

}  // namespace faster::data
