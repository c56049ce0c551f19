#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/checkpoint/checkpoint_files.h"
#include "impl/checkpoint/safetensors.h"
#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

class SafetensorsFolder : public TempFolderTest {
 protected:

  // A file of the given header text (its length prefix computed) followed by `data`.
  std::filesystem::path raw_file(const std::string& name, const std::string& header, const std::string& data) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    std::ofstream(dir_ / name, std::ios::binary) << bytes << header << data;
    return dir_ / name;
  }

  std::string open_error(const std::filesystem::path& file) {
    try {
      safetensors::File::open(file);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "opened " << file;
    return "";
  }

  std::string folder_error() {
    try {
      CheckpointFiles::open(dir_);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "opened " << dir_;
    return "";
  }

};

TEST_F(SafetensorsFolder, EveryDtypeRoundTrips) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const at::ScalarType dtype : {at::kDouble, at::kFloat, at::kHalf, at::kBFloat16, at::kLong, at::kInt, at::kShort,
                                     at::kChar, at::kByte, at::kBool}) {
    tensors.emplace_back(std::string("t_") + c10::toString(dtype), (at::arange(24) % 7).view({2, 3, 4}).to(dtype));
  }
  tensors.emplace_back("scalar", at::tensor(3.5));
  tensors.emplace_back("empty", at::zeros({0, 5}));
  tensors.emplace_back("transposed", at::arange(6, at::kFloat).view({2, 3}).t());
  safetensors::write(dir_ / "all.safetensors", tensors, {{"format", "pt"}, {"note", "x"}});

  const safetensors::File file = safetensors::File::open(dir_ / "all.safetensors");
  EXPECT_EQ(file.names().size(), tensors.size());
  EXPECT_EQ(file.metadata().at("note"), "x");
  for (const auto& [name, tensor] : tensors) {
    const at::Tensor loaded = file.tensor(name);
    EXPECT_EQ(loaded.scalar_type(), tensor.scalar_type()) << name;
    EXPECT_TRUE(at::equal(loaded, tensor)) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "all.safetensors.partial"));
}

TEST_F(SafetensorsFolder, ReadsTheReferenceLayout) {
  // The bytes Python's safetensors writes for {"a": torch.tensor([1.0, 2.0])}.
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const float values[2] = {1.0f, 2.0f};
  const auto file = raw_file("ref.safetensors", header + std::string(8 - header.size() % 8, ' '),
                             std::string(reinterpret_cast<const char*>(values), 8));
  EXPECT_TRUE(at::equal(safetensors::File::open(file).tensor("a"), at::tensor({1.0f, 2.0f})));
}

TEST_F(SafetensorsFolder, CorruptFilesAreNamedWithTheTensor) {
  const std::string data(16, '\0');
  std::ofstream(dir_ / "short.safetensors") << "abc";
  EXPECT_NE(open_error(dir_ / "short.safetensors").find("short.safetensors: truncated"), std::string::npos);

  std::string huge(8, '\xff');
  std::ofstream(dir_ / "huge.safetensors", std::ios::binary) << huge;
  EXPECT_NE(open_error(dir_ / "huge.safetensors").find("header length"), std::string::npos);

  EXPECT_NE(open_error(raw_file("nojson.safetensors", "{oops", data)).find("header is not a JSON object"), std::string::npos);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"w":{"shape":[2],"data_offsets":[0,8]}})", "tensor 'w': field 'dtype' is missing"},
      {R"({"w":{"dtype":"F8","shape":[2],"data_offsets":[0,8]}})", "tensor 'w': field 'dtype': unsupported dtype \"F8\""},
      {R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "tensor 'w': field 'shape': expected non-negative"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", "tensor 'w': field 'data_offsets': expected [begin, end]"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", "tensor 'w': data_offsets [8,0] exceed"},
      {R"({"w":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", "tensor 'w': data_offsets [0,32] exceed the data section (16 bytes)"},
      {R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "tensor 'w': holds 8 bytes, but dtype and shape need 12"},
      {R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       "tensor 'w' overlaps tensor 'v'"},
      {R"({"__metadata__":{"k":1}})", "__metadata__: field 'k': expected a string"},
  };
  for (const auto& [header, message] : cases) {
    const std::string error = open_error(raw_file("bad.safetensors", header, data));
    EXPECT_NE(error.find("bad.safetensors: " + message), std::string::npos) << error;
  }
}

TEST_F(SafetensorsFolder, TruncatedDataIsDetectedAtOpen) {
  safetensors::write(dir_ / "model.safetensors", {{"big", at::ones({64, 64})}});
  std::filesystem::resize_file(dir_ / "model.safetensors", std::filesystem::file_size(dir_ / "model.safetensors") - 1);
  EXPECT_NE(open_error(dir_ / "model.safetensors").find("tensor 'big': data_offsets"), std::string::npos);
}

TEST_F(SafetensorsFolder, WriteRefusesDuplicatesAndUnsupportedDtypes) {
  EXPECT_THROW(safetensors::write(dir_ / "d.safetensors", {{"a", at::ones({1})}, {"a", at::ones({1})}}), InputError);
  EXPECT_THROW(safetensors::write(dir_ / "c.safetensors", {{"z", at::ones({1}, at::kComplexFloat)}}), InputError);
}

TEST_F(SafetensorsFolder, ShardedCheckpointsLoadThroughTheIndex) {
  safetensors::write(dir_ / "model-00001-of-00002.safetensors", {{"a", at::ones({2})}, {"b", at::zeros({3})}});
  safetensors::write(dir_ / "model-00002-of-00002.safetensors", {{"c", at::full({1}, 7.0)}});
  const nlohmann::json index = {{"metadata", {{"total_size", 24}}},
                                {"weight_map",
                                 {{"a", "model-00001-of-00002.safetensors"},
                                  {"b", "model-00001-of-00002.safetensors"},
                                  {"c", "model-00002-of-00002.safetensors"}}}};
  std::ofstream(dir_ / "model.safetensors.index.json") << index.dump();
  const CheckpointFiles files = CheckpointFiles::open(dir_);
  EXPECT_EQ(files.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(files.tensor("c").item<float>(), 7.0f);
  EXPECT_EQ(files.file_of("b").filename(), "model-00001-of-00002.safetensors");
}

TEST_F(SafetensorsFolder, FolderErrorsNameTheFileAndTensor) {
  EXPECT_NE(folder_error().find("neither model.safetensors nor model.safetensors.index.json"), std::string::npos);
  std::filesystem::remove_all(dir_);
  EXPECT_NE(folder_error().find("no such directory"), std::string::npos);
  std::filesystem::create_directories(dir_);

  auto write_index = [&](const std::string& text) { std::ofstream(dir_ / "model.safetensors.index.json") << text; };
  write_index("[");
  EXPECT_NE(folder_error().find("model.safetensors.index.json: not a JSON object"), std::string::npos);
  write_index("{}");
  EXPECT_NE(folder_error().find("field 'weight_map'"), std::string::npos);
  write_index(R"({"weight_map": {"a": "one.safetensors"}})");
  EXPECT_NE(folder_error().find("tensor 'a': shard one.safetensors is missing"), std::string::npos);
  safetensors::write(dir_ / "one.safetensors", {{"b", at::ones({1})}});
  EXPECT_NE(folder_error().find("one.safetensors: tensor 'a' is listed in model.safetensors.index.json but absent"),
            std::string::npos);
  write_index(R"({"weight_map": {"b": "one.safetensors", "c": "two.safetensors"}})");
  safetensors::write(dir_ / "two.safetensors", {{"c", at::ones({1})}, {"b", at::ones({1})}});
  EXPECT_NE(folder_error().find("two.safetensors: tensor 'b' is also in"), std::string::npos);
  safetensors::write(dir_ / "two.safetensors", {{"c", at::ones({1})}, {"d", at::ones({1})}});
  EXPECT_NE(folder_error().find("two.safetensors: tensor 'd' is not listed"), std::string::npos);
}

}  // namespace
}  // namespace specgate
