// read_state_dict on archives written by Python's torch.save: an OrderedDict whose tensors are
// views (offsets, strides, several on one storage) of several dtypes; and files that are no
// state_dict.
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <chrono>

#include "faster/core/error.h"
#include "faster/train/checkpoint.h"
#include "support/test_support.h"

namespace faster::train {
namespace {

// Runs a Python statement with `torch` and `collections` imported and `path` bound.
test::RunResult python(const std::string& statement, const std::filesystem::path& path) {
  return test::run_shell("/usr/bin/python3 -c \"import collections, torch; path = '" +
                         path.string() + "'; " + statement + "\"");
}

bool have_python_torch() {
  return test::run_shell("/usr/bin/python3 -c 'import torch' 2>/dev/null").exit_code == 0;
}

TEST(Checkpoint, ReadsTorchSaveViewsAndDtypes) {
  if (!have_python_torch()) GTEST_SKIP() << "no Python torch";
  test::TempDir dir;
  const auto path = dir / "views.pt";
  const auto r = python(
      "x = torch.arange(12.).reshape(3, 4); "
      "torch.save(collections.OrderedDict(t=x.t(), row=x[1], h=torch.arange(3).half(), "
      "n=torch.tensor(7), b=torch.tensor([True, False])), path)",
      path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto d = read_state_dict(path);
  std::vector<std::string> names;
  for (const auto& e : d) names.push_back(e.key());
  EXPECT_EQ(names, (std::vector<std::string>{"t", "row", "h", "n", "b"}));
  const auto x = torch::arange(12.0, torch::kFloat).reshape({3, 4});
  EXPECT_TRUE(torch::equal(d.at("t"), x.t()));
  EXPECT_TRUE(torch::equal(d.at("row"), x[1]));
  EXPECT_TRUE(d.at("t").is_alias_of(d.at("row"))) << "one storage, as saved";
  EXPECT_TRUE(torch::equal(d.at("h"), torch::arange(3).to(torch::kHalf)));
  EXPECT_EQ(d.at("n").dim(), 0);
  EXPECT_EQ(d.at("n").scalar_type(), torch::kLong);
  EXPECT_EQ(d.at("n").item<int64_t>(), 7);
  EXPECT_TRUE(torch::equal(d.at("b"), torch::tensor({true, false})));
}

// A flipped bit inside a tensor's bytes (its zip entry's CRC-32 no longer matches; Python's
// zipfile.testzip() names the entry) was read without a word.  It is refused, naming the entry:
// in faster's own weights and in an archive Python's torch.save wrote; an intact file reads.
TEST(Checkpoint, AFlippedBitInATensorIsRefusedNamingItsEntry) {
  test::TempDir dir;
  torch::nn::Linear linear(64, 32);
  save_state_dict(*linear, dir / "w.pt", nlohmann::json{{"format", "faster weights"}});
  const auto flip = [](const std::filesystem::path& path, const std::string& entry) {
    // The entry's data: a float tensor's middle, found by its bytes in the file.
    std::string bytes = test::read_file(path);
    const auto d = read_state_dict(path);
    const auto t = d.at(entry).contiguous();
    const std::string data(static_cast<const char*>(t.data_ptr()), t.nbytes());
    const auto at = bytes.find(data);
    ASSERT_NE(at, std::string::npos);
    bytes[at + data.size() / 2] ^= 0x10;
    test::write_file(path, bytes);
  };
  EXPECT_NO_THROW(read_state_dict(dir / "w.pt"));
  flip(dir / "w.pt", "weight");
  try {
    read_state_dict(dir / "w.pt");
    FAIL() << "a damaged archive was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(": its entry archive/data/"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("does not match its CRC-32"), std::string::npos);
    EXPECT_NE(e.hint().find("restore it from a copy"), std::string::npos);
  }
  if (!have_python_torch()) GTEST_SKIP() << "no Python torch";
  const auto py = dir / "py.pt";
  const auto r = python("torch.save(collections.OrderedDict(w=torch.arange(4096.)), path)", py);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NO_THROW(read_state_dict(py));
  flip(py, "w");
  const auto bad = python("import zipfile; print(zipfile.ZipFile(path).testzip())", py);
  EXPECT_NE(bad.output.find("data/0"), std::string::npos) << bad.output;  // Python names it too
  EXPECT_THROW(read_state_dict(py), Error);
}

TEST(Checkpoint, RejectsWhatIsNotAStateDict) {
  test::TempDir dir;
  EXPECT_THROW(read_state_dict(dir / "absent.pt"), Error);
  test::write_file(dir / "text.pt", "not a zip archive\n");
  try {
    read_state_dict(dir / "text.pt");
    FAIL() << "a text file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a PyTorch zip archive"), std::string::npos)
        << e.what();
  }
  // A real archive cut in half (an interrupted copy): said to be truncated, not "not an archive".
  torch::nn::Linear linear(4, 3);
  save_state_dict(*linear, dir / "whole.pt");
  const std::string whole = test::read_file(dir / "whole.pt");
  test::write_file(dir / "half.pt", whole.substr(0, whole.size() / 2));
  try {
    read_state_dict(dir / "half.pt");
    FAIL() << "half an archive was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a zip archive without its end (" +
                                         std::to_string(whole.size() / 2) + " bytes): truncated"),
              std::string::npos)
        << e.what();
  }
  if (!have_python_torch()) GTEST_SKIP() << "no Python torch";
  // A tensor, and a dict of something else: pickles this reader reads, but no state_dicts.
  for (const char* value : {"torch.ones(2)", "{'epoch': 3, 'model': {'w': 1}}"}) {
    const auto other = dir / "other.pt";
    ASSERT_EQ(python(std::string("torch.save(") + value + ", path)", other).exit_code, 0);
    try {
      read_state_dict(other);
      FAIL() << value << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(value[0] == '{' ? "not a state_dict (a dict of epoch, "
                                                             "model, none of them name -> tensor"
                                                           : "not a state_dict"),
                std::string::npos)
          << e.what();
    }
  }
  // A whole pickled model (torch.save(model)): named as such, not as an opcode number.
  const auto model = dir / "model.pt";
  ASSERT_EQ(python("torch.save(torch.nn.Linear(2, 3), path)", model).exit_code, 0);
  try {
    read_state_dict(model);
    FAIL() << "a pickled module was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it pickles a torch.nn.modules.linear.Linear object "
                                         "(torch.save(model) writes the whole model), not a "
                                         "state_dict"),
              std::string::npos)
        << e.what();
  }
}

// A torch.save archive whose data.pkl is `pickle` (protocol 2 header added), with `records`.
void write_pickle(const std::filesystem::path& path, const std::string& pickle,
                  const std::vector<std::pair<std::string, std::string>>& records = {}) {
  caffe2::serialize::PyTorchStreamWriter writer(path.string());
  const std::string data = std::string("\x80\x02", 2) + pickle + ".";
  writer.writeRecord("data.pkl", data.data(), data.size());
  for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
}

std::string read_error(const std::filesystem::path& path) {
  try {
    read_state_dict(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(read without error)";
}

// Pickle opcodes, written out.
std::string unicode(const std::string& s) {
  const uint32_t n = static_cast<uint32_t>(s.size());
  return "X" + std::string(reinterpret_cast<const char*>(&n), 4) + s;
}
std::string long1(int64_t v) {
  return std::string("\x8a\x08", 2) + std::string(reinterpret_cast<const char*>(&v), 8);
}

// {"w": float storage "key" of `numel` elements viewed at `offset`, size 2, stride 1}.
std::string view_pickle(const std::string& key, int64_t numel, int64_t offset) {
  return "}" + unicode("w") + "ctorch._utils\n_rebuild_tensor_v2\n(" + "(" + unicode("storage") +
         "ctorch\nFloatStorage\n" + unicode(key) + unicode("cpu") + long1(numel) + "tQ" +
         long1(offset) + "K\x02\x85K\x01\x85\x89" + "ccollections\nOrderedDict\n)R" + "tRs";
}

// Hostile pickles end in an error, quickly and in bounded memory: nests deep enough to overflow the
// stack as they were freed, built inner-first or outer-first from memoized lists (a 2 MB file
// crashed eval), a memoized 1 MB string fetched again and again (1 MB of file reached 3.3 GB), a
// tensor view far outside its storage (eval crashed reading it), storage names that alias one
// record.  A failure after a class that is no model's (numpy's) is not blamed on a whole model.
TEST(Checkpoint, HostilePicklesAreRefusedInBoundedTimeAndMemory) {
  test::TempDir dir;
  const auto started = std::chrono::steady_clock::now();
  const int n = 200000;
  write_pickle(dir / "lists.pt", std::string(n, ']') + std::string(n - 1, 'a'));
  EXPECT_NE(read_error(dir / "lists.pt").find("not a state_dict"), std::string::npos)
      << read_error(dir / "lists.pt");
  write_pickle(dir / "tuples.pt", ")" + std::string(n, '\x85'));
  EXPECT_NE(read_error(dir / "tuples.pt").find("not a state_dict"), std::string::npos);
  std::string linked;  // n memoized lists, then each put into the one made before it
  for (int k = 0; k < n; ++k) {
    const uint32_t id = static_cast<uint32_t>(k);
    linked += "]r" + std::string(reinterpret_cast<const char*>(&id), 4) + "0";
  }
  for (int k = n - 1; k >= 1; --k) {
    const uint32_t outer = static_cast<uint32_t>(k - 1), inner = static_cast<uint32_t>(k);
    linked += "j" + std::string(reinterpret_cast<const char*>(&outer), 4) + "j" +
              std::string(reinterpret_cast<const char*>(&inner), 4) + "a0";
  }
  linked += "j" + std::string(4, '\0');
  write_pickle(dir / "linked.pt", linked);
  EXPECT_NE(read_error(dir / "linked.pt").find("not a state_dict"), std::string::npos)
      << read_error(dir / "linked.pt");
  const uint32_t size = 1 << 20;
  std::string memo =
      "X" + std::string(reinterpret_cast<const char*>(&size), 4) + std::string(size, 's') + "q\x01";
  for (int k = 0; k < 3000; ++k) memo += "h\x01";
  write_pickle(dir / "memo.pt", memo);
  EXPECT_NE(read_error(dir / "memo.pt").find("MB of strings from"), std::string::npos)
      << read_error(dir / "memo.pt");
  const std::string ten_floats(40, '\0');
  write_pickle(dir / "inside.pt", view_pickle("0", 10, 8), {{"data/0", ten_floats}});
  EXPECT_EQ(read_state_dict(dir / "inside.pt").at("w").numel(), 2);
  for (const int64_t offset : {int64_t{9}, int64_t{3} << 61, (int64_t{1} << 62) - 10}) {
    write_pickle(dir / "outside.pt", view_pickle("0", 10, offset), {{"data/0", ten_floats}});
    EXPECT_NE(read_error(dir / "outside.pt").find("a tensor view outside its storage"),
              std::string::npos)
        << offset << ": " << read_error(dir / "outside.pt");
  }
  write_pickle(dir / "long.pt", view_pickle("0", 11, 0), {{"data/0", ten_floats}});
  EXPECT_NE(read_error(dir / "long.pt").find("storage 0 is shorter than its 11 elements"),
            std::string::npos)
      << read_error(dir / "long.pt");
  write_pickle(dir / "alias.pt", view_pickle(std::string("0\0x", 3), 10, 0),
               {{"data/0", ten_floats}});
  EXPECT_NE(read_error(dir / "alias.pt").find("a bad storage name"), std::string::npos)
      << read_error(dir / "alias.pt");
  write_pickle(dir / "numpy.pt", "cnumpy.core.multiarray\nscalar\nI1\n");
  EXPECT_NE(read_error(dir / "numpy.pt").find("unsupported pickle opcode 73"), std::string::npos)
      << read_error(dir / "numpy.pt");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
}

// What torch.save writes beside a state_dict: sets (protocol 4), and a pickled model under
// "model", named as such.
TEST(Checkpoint, CheckpointDictsWithSetsAndModels) {
  if (!have_python_torch()) GTEST_SKIP() << "no Python torch";
  test::TempDir dir;
  ASSERT_EQ(python("torch.save({'state_dict': torch.nn.Linear(2, 3).state_dict(), 'tags': {1, 2}, "
                   "'frozen': frozenset([3])}, path, pickle_protocol=4)",
                   dir / "sets.pt")
                .exit_code,
            0);
  const auto d = read_state_dict(dir / "sets.pt");
  EXPECT_EQ(d.size(), 2u);
  EXPECT_TRUE(d.contains("weight"));
  ASSERT_EQ(
      python("torch.save({'model': torch.nn.Linear(2, 3), 'epoch': 3}, path)", dir / "module.pt")
          .exit_code,
      0);
  EXPECT_NE(read_error(dir / "module.pt")
                .find("its \"model\" is a pickled torch.nn.modules.linear.Linear object"),
            std::string::npos)
      << read_error(dir / "module.pt");
}

}  // namespace
}  // namespace faster::train
