#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/checkpoint/checkpoint_files.h"
#include "impl/checkpoint/safetensors.h"
#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

using testing::AllOf;
using testing::HasSubstr;

// The one-line message of the InputError that `action` throws; a test failure if it throws none.
template <typename Action>
std::string input_error(const Action& action) {
  try {
    action();
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "no InputError was thrown";
  return "";
}

// A safetensors file's bytes: the little-endian header length, the header, the data.
std::string file_bytes(const std::string& header, const std::string& data) {
  std::string length(8, '\0');
  for (size_t i = 0; i < 8; ++i) length[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return length + header + data;
}

class SafetensorsTest : public TempFolderTest {
 protected:
  std::filesystem::path write_bytes(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }

  std::string read_bytes(const std::string& name) {
    std::ifstream in(dir_ / name, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::vector<std::string> folder_listing() {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string open_error(const std::string& name) {
    return input_error([&] { safetensors::File::open(dir_ / name); });
  }
};

TEST_F(SafetensorsTest, RoundTripsEveryDtype) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const at::ScalarType dtype : {at::kDouble, at::kFloat, at::kHalf, at::kBFloat16, at::kLong, at::kInt, at::kShort,
                                     at::kChar, at::kByte, at::kBool}) {
    const std::string name = c10::toString(dtype);
    tensors.emplace_back(name, (at::arange(24) % 7 - 3).view({2, 3, 4}).to(dtype));
    tensors.emplace_back(name + ".scalar", at::scalar_tensor(1, dtype));
    tensors.emplace_back(name + ".empty", at::empty({0, 3}, dtype));
  }
  tensors.emplace_back("transposed", at::arange(6, at::kFloat).view({2, 3}).t());
  safetensors::write(dir_ / "all.safetensors", tensors);

  const safetensors::File file = safetensors::File::open(dir_ / "all.safetensors");
  EXPECT_EQ(file.names().size(), tensors.size());
  EXPECT_TRUE(file.metadata().empty());
  for (const auto& [name, tensor] : tensors) {
    EXPECT_EQ(file.dtype(name), tensor.scalar_type()) << name;
    EXPECT_EQ(file.shape(name), tensor.sizes().vec()) << name;
    const at::Tensor loaded = file.tensor(name);
    EXPECT_EQ(loaded.scalar_type(), tensor.scalar_type()) << name;
    EXPECT_EQ(loaded.sizes(), tensor.sizes()) << name;
    EXPECT_TRUE(at::equal(loaded, tensor)) << name;
  }
  EXPECT_EQ(folder_listing(), std::vector<std::string>{"all.safetensors"});
}

TEST_F(SafetensorsTest, RoundTripsMetadata) {
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {"note", "\"quoted\", ünicode\nand a newline"}};
  safetensors::write(dir_ / "meta.safetensors", {{"a", at::ones({2})}}, metadata);
  EXPECT_EQ(safetensors::File::open(dir_ / "meta.safetensors").metadata(), metadata);

  safetensors::write(dir_ / "plain.safetensors", {{"a", at::ones({2})}});
  EXPECT_THAT(read_bytes("plain.safetensors"), testing::Not(HasSubstr("__metadata__")));
}

TEST_F(SafetensorsTest, WritesTheBytesOfTheReferenceImplementation) {
  // What Python's safetensors.torch.save_file({"a": torch.tensor([1.0, 2.0])}) writes: a 56-byte
  // header padded with two spaces, then the floats.
  const std::string reference = std::string("\x38\0\0\0\0\0\0\0", 8) +
                                R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})" + "  " +
                                std::string("\0\0\x80\x3f\0\0\0\x40", 8);
  safetensors::write(dir_ / "ours.safetensors", {{"a", at::tensor({1.0f, 2.0f})}});
  EXPECT_EQ(read_bytes("ours.safetensors"), reference);

  write_bytes("reference.safetensors", reference);
  const safetensors::File file = safetensors::File::open(dir_ / "reference.safetensors");
  EXPECT_TRUE(at::equal(file.tensor("a"), at::tensor({1.0f, 2.0f})));
}

TEST_F(SafetensorsTest, WritesMetadataFirstAndTensorsInTheOrderGiven) {
  safetensors::write(dir_ / "order.safetensors", {{"z", at::ones({1})}, {"a", at::ones({1})}}, {{"format", "pt"}});
  const std::string header = R"({"__metadata__":{"format":"pt"},)"
                             R"("z":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  EXPECT_EQ(read_bytes("order.safetensors").substr(8, header.size()), header);
}

TEST_F(SafetensorsTest, ReadsUnpaddedHeadersWithFieldsInAnyOrder) {
  // Unpadded, so the data section is misaligned and tensor() has to copy.
  const std::string header = R"({"b":{"shape":[2],"data_offsets":[0,16],"dtype":"I64"},"__metadata__":{"k":"v"},)"
                             R"("a":{"data_offsets":[16,20],"dtype":"F32","shape":[]},)"
                             R"("nothing":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})";
  ASSERT_NE(header.size() % 8, 0u);
  const int64_t b[2] = {1, -2};
  const float a = 0.5f;
  const std::string data =
      std::string(reinterpret_cast<const char*>(b), 16) + std::string(reinterpret_cast<const char*>(&a), 4);
  write_bytes("odd.safetensors", file_bytes(header, data));

  const safetensors::File file = safetensors::File::open(dir_ / "odd.safetensors");
  EXPECT_EQ(file.names(), (std::vector<std::string>{"a", "b", "nothing"}));
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_TRUE(at::equal(file.tensor("b"), at::tensor({int64_t{1}, int64_t{-2}})));
  EXPECT_EQ(file.tensor("a").dim(), 0);
  EXPECT_EQ(file.tensor("a").item<float>(), 0.5f);
  EXPECT_EQ(file.tensor("nothing").numel(), 0);
}

TEST_F(SafetensorsTest, TensorsViewTheMappingAndOutliveTheFile) {
  safetensors::write(dir_ / "view.safetensors", {{"a", at::arange(1000, at::kFloat)}});
  at::Tensor kept;
  {
    const safetensors::File file = safetensors::File::open(dir_ / "view.safetensors");
    EXPECT_EQ(file.tensor("a").data_ptr(), file.tensor("a").data_ptr());
    kept = file.tensor("a");
  }
  EXPECT_TRUE(at::equal(kept, at::arange(1000, at::kFloat)));
}

TEST_F(SafetensorsTest, WritesSparseTensorsDense) {
  safetensors::write(dir_ / "sparse.safetensors", {{"eye", at::eye(3).to_sparse()}});
  EXPECT_TRUE(at::equal(safetensors::File::open(dir_ / "sparse.safetensors").tensor("eye"), at::eye(3)));
}

TEST_F(SafetensorsTest, AbsentTensorsAreNamed) {
  safetensors::write(dir_ / "x.safetensors", {{"a", at::ones({1})}});
  const safetensors::File file = safetensors::File::open(dir_ / "x.safetensors");
  EXPECT_FALSE(file.contains("nope"));
  EXPECT_THAT(input_error([&] { file.tensor("nope"); }), HasSubstr("x.safetensors: tensor 'nope': not in this file"));
  EXPECT_THAT(input_error([&] { file.dtype("nope"); }), HasSubstr("x.safetensors: tensor 'nope'"));
  EXPECT_THAT(input_error([&] { file.shape("nope"); }), HasSubstr("x.safetensors: tensor 'nope'"));
}

TEST_F(SafetensorsTest, WriteErrorsNameTheFileAndTensor) {
  const auto write_error = [&](const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                               const std::map<std::string, std::string>& metadata = {}) {
    return input_error([&] { safetensors::write(dir_ / "w.safetensors", tensors, metadata); });
  };
  EXPECT_THAT(write_error({{"a", at::ones({1})}, {"a", at::ones({1})}}),
              HasSubstr("w.safetensors: tensor 'a': given twice"));
  EXPECT_THAT(write_error({{"__metadata__", at::ones({1})}}),
              HasSubstr("w.safetensors: tensor '__metadata__': the name is reserved"));
  EXPECT_THAT(write_error({{"c", at::ones({1}, at::kComplexFloat)}}),
              HasSubstr("w.safetensors: tensor 'c': safetensors cannot hold dtype ComplexFloat"));
  EXPECT_THAT(write_error({{"u", at::Tensor()}}), HasSubstr("w.safetensors: tensor 'u': undefined tensor"));
  EXPECT_THAT(write_error({{"bad\xff", at::ones({1})}}),
              HasSubstr("w.safetensors: tensor 'bad\xff': the name is not valid UTF-8"));
  EXPECT_THAT(write_error({{"a", at::ones({1})}}, {{"k", "\xff"}}),
              HasSubstr("w.safetensors: field '__metadata__.k': not valid UTF-8"));
  EXPECT_TRUE(folder_listing().empty());

  EXPECT_THAT(input_error([&] {
                safetensors::write(dir_ / "no" / "w.safetensors", {{"a", at::ones({1})}});
              }),
              AllOf(HasSubstr("w.safetensors.partial: cannot create"), HasSubstr("No such file or directory")));
  std::filesystem::create_directory(dir_ / "taken.safetensors");
  EXPECT_THAT(input_error([&] {
                safetensors::write(dir_ / "taken.safetensors", {{"a", at::ones({1})}});
              }),
              HasSubstr("taken.safetensors: cannot rename"));
  EXPECT_EQ(folder_listing(), std::vector<std::string>{"taken.safetensors"});
}

TEST_F(SafetensorsTest, FileErrorsNameTheFile) {
  EXPECT_THAT(open_error("missing.safetensors"), HasSubstr("missing.safetensors: cannot open: No such file"));
  std::filesystem::create_directory(dir_ / "folder.safetensors");
  EXPECT_THAT(open_error("folder.safetensors"), HasSubstr("folder.safetensors: not a regular file"));
  write_bytes("empty.safetensors", "");
  EXPECT_THAT(open_error("empty.safetensors"), HasSubstr("empty.safetensors: header length: the file is 0 bytes"));
  write_bytes("short.safetensors", "abc");
  EXPECT_THAT(open_error("short.safetensors"), HasSubstr("short.safetensors: header length: the file is 3 bytes"));
  write_bytes("huge.safetensors", std::string(8, '\xff') + "{}");
  EXPECT_THAT(open_error("huge.safetensors"),
              HasSubstr("huge.safetensors: header length 18446744073709551615 exceeds the file (10 bytes)"));
  write_bytes("nojson.safetensors", file_bytes("{oops", ""));
  EXPECT_THAT(open_error("nojson.safetensors"), HasSubstr("nojson.safetensors: header is not valid JSON"));
  write_bytes("list.safetensors", file_bytes("[1]", ""));
  EXPECT_THAT(open_error("list.safetensors"), HasSubstr("list.safetensors: header: expected a JSON object, got [1]"));
}

TEST_F(SafetensorsTest, HeaderErrorsNameTheFileAndTensor) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"w":[1]})", "tensor 'w': expected an object, got [1]"},
      {R"({"w":{"shape":[2],"data_offsets":[0,8]}})", "tensor 'w': field 'dtype' is missing"},
      {R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", "tensor 'w': field 'shape' is missing"},
      {R"({"w":{"dtype":"F32","shape":[2]}})", "tensor 'w': field 'data_offsets' is missing"},
      {R"({"w":{"dtype":5,"shape":[2],"data_offsets":[0,8]}})", "tensor 'w': field 'dtype': unsupported dtype 5"},
      {R"({"w":{"dtype":"F8","shape":[2],"data_offsets":[0,8]}})",
       R"(tensor 'w': field 'dtype': unsupported dtype "F8")"},
      {R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})",
       "tensor 'w': field 'shape': expected a list of sizes"},
      {R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})",
       "tensor 'w': field 'shape': expected non-negative integers, got [2.5]"},
      {R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
       "tensor 'w': field 'shape': expected non-negative integers, got [-2]"},
      {R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
       "tensor 'w': field 'shape': [4294967296,4294967296] is too large"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":"0-8"}})",
       "tensor 'w': field 'data_offsets': expected [begin, end], got \"0-8\""},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}})",
       "tensor 'w': field 'data_offsets': expected [begin, end]"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-1,7]}})",
       "tensor 'w': field 'data_offsets': expected [begin, end]"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})",
       "tensor 'w': data_offsets [8, 0]: begin is past end"},
      {R"({"w":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})",
       "tensor 'w': data_offsets [0, 32] exceed the file's data section (16 bytes)"},
      {R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
       "tensor 'w': data_offsets [0, 8] hold 8 bytes, but dtype F32 and shape [3] need 12"},
      {R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       "tensor 'w': data_offsets [4, 12] overlap tensor 'v' at [0, 8]"},
      {R"({"w":{"dtype":"F32","shape":[1e400],"data_offsets":[0,8]}})",
       "header is not valid JSON at line 1, column 30: number overflow parsing '1e400'"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]}})",
       "tensor 'w': field 'data_offsets': expected [begin, end]"},
  };
  for (const auto& [header, message] : cases) {
    write_bytes("bad.safetensors", file_bytes(header, std::string(16, '\0')));
    EXPECT_THAT(open_error("bad.safetensors"), HasSubstr("bad.safetensors: " + message)) << header;
  }
}

TEST_F(SafetensorsTest, MetadataThatIsNotStringsIsIgnoredWithOneWarningPerField) {
  const std::string header = R"({"__metadata__":{"k":1,"format":"pt","n":[2]},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  write_bytes("meta.safetensors", file_bytes(header, std::string(8, '\0')));
  testing::internal::CaptureStderr();
  const safetensors::File file = safetensors::File::open(dir_ / "meta.safetensors");
  safetensors::File::open(dir_ / "meta.safetensors");
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  const std::string path = (dir_ / "meta.safetensors").string();
  EXPECT_EQ(warnings, "warning: " + path + ": field '__metadata__.k': expected a string, got 1; ignored (not reported again for this file)\n" +
                          "warning: " + path + ": field '__metadata__.n': expected a string, got [2]; ignored (not reported again for this file)\n");
  write_bytes("list.safetensors", file_bytes(R"({"__metadata__":[1]})", ""));
  testing::internal::CaptureStderr();
  EXPECT_TRUE(safetensors::File::open(dir_ / "list.safetensors").metadata().empty());
  EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("field '__metadata__': expected an object of strings, got [1]; ignored"));
}

TEST_F(SafetensorsTest, TruncatedFilesFailAtOpen) {
  safetensors::write(dir_ / "t.safetensors", {{"first", at::ones({64})}, {"last", at::ones({64, 64})}});
  const uintmax_t size = std::filesystem::file_size(dir_ / "t.safetensors");
  std::filesystem::resize_file(dir_ / "t.safetensors", size - 1);
  EXPECT_THAT(open_error("t.safetensors"), HasSubstr("t.safetensors: tensor 'last': data_offsets [256, 16640] exceed"));
  std::filesystem::resize_file(dir_ / "t.safetensors", 40);
  EXPECT_THAT(open_error("t.safetensors"), HasSubstr("t.safetensors: header length 128 exceeds the file (40 bytes)"));
}

using CheckpointFilesTest = SafetensorsTest;

TEST_F(CheckpointFilesTest, LoadsASingleFile) {
  safetensors::write(dir_ / "model.safetensors", {{"b", at::zeros({3})}, {"a", at::ones({2})}});
  const CheckpointFiles files = CheckpointFiles::open(dir_);
  EXPECT_EQ(files.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(files.contains("a"));
  EXPECT_FALSE(files.contains("c"));
  EXPECT_TRUE(at::equal(files.tensor("a"), at::ones({2})));
  EXPECT_EQ(files.file_of("b"), dir_ / "model.safetensors");
}

class CheckpointFilesShardedTest : public CheckpointFilesTest {
 protected:
  void SetUp() override {
    CheckpointFilesTest::SetUp();
    safetensors::write(dir_ / "model-00001-of-00002.safetensors", {{"a", at::ones({2})}, {"b", at::zeros({3})}});
    safetensors::write(dir_ / "model-00002-of-00002.safetensors", {{"c", at::full({1}, 7.0)}});
    write_index({{"a", "model-00001-of-00002.safetensors"},
                 {"b", "model-00001-of-00002.safetensors"},
                 {"c", "model-00002-of-00002.safetensors"}});
  }

  void write_index(const nlohmann::json& weight_map) {
    const nlohmann::json index = {{"metadata", {{"total_size", 24}}}, {"weight_map", weight_map}};
    write_bytes("model.safetensors.index.json", index.dump());
  }

  std::string open_folder_error() {
    return input_error([&] { CheckpointFiles::open(dir_); });
  }
};

TEST_F(CheckpointFilesShardedTest, LoadsShardsThroughTheIndex) {
  const CheckpointFiles files = CheckpointFiles::open(dir_);
  EXPECT_EQ(files.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(at::equal(files.tensor("a"), at::ones({2})));
  EXPECT_TRUE(at::equal(files.tensor("b"), at::zeros({3})));
  EXPECT_EQ(files.tensor("c").item<float>(), 7.0f);
  EXPECT_EQ(files.file_of("b"), dir_ / "model-00001-of-00002.safetensors");
  EXPECT_EQ(files.file_of("c"), dir_ / "model-00002-of-00002.safetensors");
}

TEST_F(CheckpointFilesShardedTest, PrefersTheSingleFileOverTheIndex) {
  safetensors::write(dir_ / "model.safetensors", {{"only", at::ones({1})}});
  EXPECT_EQ(CheckpointFiles::open(dir_).names(), std::vector<std::string>{"only"});
}

TEST_F(CheckpointFilesShardedTest, AbsentTensorsNameTheFolder) {
  const CheckpointFiles files = CheckpointFiles::open(dir_);
  const std::string absent = dir_.string() + ": tensor 'nope': not in the checkpoint";
  EXPECT_THAT(input_error([&] { files.tensor("nope"); }), HasSubstr(absent));
  EXPECT_THAT(input_error([&] { files.file_of("nope"); }), HasSubstr(absent));
}

TEST_F(CheckpointFilesShardedTest, FolderErrorsNameTheFolder) {
  std::filesystem::remove(dir_ / "model.safetensors.index.json");
  EXPECT_THAT(open_folder_error(),
              HasSubstr(dir_.string() + ": neither model.safetensors nor model.safetensors.index.json is present"));
  remove_tree(dir_);
  EXPECT_THAT(open_folder_error(), HasSubstr(dir_.string() + ": no such checkpoint folder"));
}

TEST_F(CheckpointFilesShardedTest, IndexErrorsNameTheIndexAndField) {
  const std::string index = "model.safetensors.index.json: ";
  write_bytes("model.safetensors.index.json", "{\"weight_map\": ");
  EXPECT_THAT(open_folder_error(), HasSubstr(index + "not valid JSON"));
  write_bytes("model.safetensors.index.json", "[]");
  EXPECT_THAT(open_folder_error(), HasSubstr(index + "expected a JSON object"));
  write_bytes("model.safetensors.index.json", "{}");
  const std::string line_1 = "model.safetensors.index.json:1: ";
  EXPECT_THAT(open_folder_error(), HasSubstr(line_1 + "field 'weight_map': missing"));
  write_bytes("model.safetensors.index.json", "{\"metadata\": {},\n \"weight_map\": []}");
  EXPECT_THAT(open_folder_error(), HasSubstr("model.safetensors.index.json:2: field 'weight_map': expected an object"));
  write_index({{"a", 1}});
  EXPECT_THAT(open_folder_error(), HasSubstr(line_1 + "field 'weight_map': tensor 'a': expected a file name"));
  write_index({{"a", "../model-00001-of-00002.safetensors"}});
  EXPECT_THAT(open_folder_error(),
              HasSubstr(line_1 + "field 'weight_map': tensor 'a': '../model-00001-of-00002.safetensors' is not a file name"));
}

TEST_F(CheckpointFilesShardedTest, ShardErrorsNameTheShardAndTensor) {
  write_index({{"a", "model-00001-of-00002.safetensors"}, {"d", "model-00003-of-00003.safetensors"}});
  EXPECT_THAT(
      open_folder_error(),
      HasSubstr("model.safetensors.index.json: tensor 'd': shard model-00003-of-00003.safetensors does not exist"));

  write_index({{"a", "model-00001-of-00002.safetensors"},
               {"b", "model-00001-of-00002.safetensors"},
               {"c", "model-00001-of-00002.safetensors"}});
  EXPECT_THAT(open_folder_error(), HasSubstr("model-00001-of-00002.safetensors: tensor 'c' is listed in "
                                             "model.safetensors.index.json but absent from this file"));

  write_index({{"a", "model-00001-of-00002.safetensors"}, {"c", "model-00002-of-00002.safetensors"}});
  EXPECT_THAT(open_folder_error(), HasSubstr("model-00001-of-00002.safetensors: tensor 'b' is not listed in "
                                             "model.safetensors.index.json"));

  safetensors::write(dir_ / "model-00002-of-00002.safetensors", {{"c", at::ones({1})}, {"b", at::ones({3})}});
  write_index({{"a", "model-00001-of-00002.safetensors"},
               {"b", "model-00001-of-00002.safetensors"},
               {"c", "model-00002-of-00002.safetensors"}});
  EXPECT_THAT(open_folder_error(),
              HasSubstr("model-00002-of-00002.safetensors: tensor 'b' is also in model-00001-of-00002.safetensors"));

  std::filesystem::resize_file(dir_ / "model-00002-of-00002.safetensors", 20);
  EXPECT_THAT(open_folder_error(), HasSubstr("model-00002-of-00002.safetensors: header length"));
}

}  // namespace
}  // namespace specgate
