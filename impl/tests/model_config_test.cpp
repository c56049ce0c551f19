#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/model/config.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

using nlohmann::json;

json minimal_config() {
  return {{"model_type", "llama"},     {"vocab_size", 32},        {"hidden_size", 8},
          {"intermediate_size", 16},   {"num_hidden_layers", 1},  {"num_attention_heads", 2}};
}

class ModelConfigTest : public TempFolderTest {
 protected:
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // The message read_model_config throws for a config.json holding `text`, after the file's
  // path: ":LINE: field ..." or ": ...".
  std::string error_for(const std::string& text) {
    const std::filesystem::path path = write("config.json", text);
    try {
      read_model_config(path);
    } catch (const InputError& e) {
      const std::string prefix = path.string();
      EXPECT_EQ(std::string(e.what()).substr(0, prefix.size()), prefix);
      return std::string(e.what()).substr(prefix.size());
    }
    return "no error";
  }

  // The config written one key a line, keys sorted: "{" is line 1.
  std::string error_with(const std::string& field, const json& value) {
    json config = minimal_config();
    config[field] = value;
    return error_for(config.dump(2));
  }
};

TEST_F(ModelConfigTest, NumbersBeyondTheirRangeAreRefusedByFileLineAndField) {
  EXPECT_EQ(error_for("{\"model_type\": \"llama\",\n \"vocab_size\": 1e400}"),
            ": not valid JSON at line 2, column 16: number overflow parsing '1e400'");
  EXPECT_EQ(error_with("vocab_size", json::parse("18446744073709551615")),
            ":7: field 'vocab_size': 18446744073709551615 is out of range");
  EXPECT_EQ(error_with("hidden_size", 4294967296LL), ":2: field 'hidden_size': expected an integer in [1, 2147483647], got number 4294967296");
  EXPECT_EQ(error_with("hidden_size", 8.0), ":2: field 'hidden_size': expected an integer in [1, 2147483647], got number 8.0");
  EXPECT_EQ(error_with("num_attention_heads", -2), ":5: field 'num_attention_heads': expected an integer in [1, 2147483647], got number -2");
  EXPECT_EQ(error_with("rms_norm_eps", "small"), ":7: field 'rms_norm_eps': expected a positive number, got string");
  EXPECT_EQ(error_with("eos_token_id", json::array({1, 1e30})), ":2: field 'eos_token_id': expected token ids, got number 1e+30");
  EXPECT_EQ(error_with("eos_token_id", 40), ":2: field 'eos_token_id': outside the vocabulary");
  EXPECT_EQ(error_with("vocab_size", nullptr), ":7: field 'vocab_size': missing");
}

TEST_F(ModelConfigTest, FieldsInsideAnObjectAreNamedByTheirPathAndLine) {
  EXPECT_EQ(error_with("rope_scaling", {{"rope_type", "llama3"}, {"factor", -1}}), ":8: field 'rope_scaling.factor': expected a positive number, got number -1");
  EXPECT_EQ(error_with("rope_scaling", {{"type", "yarn"}}), ":8: field 'rope_scaling.type': unsupported rope scaling 'yarn' (supported: default, linear, llama3)");
  EXPECT_EQ(error_with("rope_scaling", {{"rope_type", "llama3"}, {"low_freq_factor", 4}, {"high_freq_factor", 1}}),
            ":8: field 'rope_scaling.high_freq_factor': must exceed low_freq_factor");
  EXPECT_EQ(error_with("rope_scaling", "linear"), ":7: field 'rope_scaling': expected an object, got string");
  // A key given twice counts where it is given last, as the parsed value keeps it.
  EXPECT_EQ(error_for("{\"model_type\": \"llama\", \"vocab_size\": 32,\n\"vocab_size\": 0}"),
            ":2: field 'vocab_size': expected an integer in [1, 2147483647], got number 0");
}

// transformers 5 writes rope_theta and the scaling into one `rope_parameters` object.
TEST_F(ModelConfigTest, RopeParametersOfTransformers5GiveThetaAndScaling) {
  json config = minimal_config();
  config["rope_parameters"] = {{"rope_theta", 100000.0}, {"rope_type", "default"}};
  ModelConfig parsed = read_model_config(write("config.json", config.dump()));
  EXPECT_EQ(parsed.rope_theta, 100000.0);
  EXPECT_EQ(parsed.rope_scaling.kind, RopeScaling::Kind::kNone);

  config["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "llama3"}, {"factor", 8.0},
                               {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                               {"original_max_position_embeddings", 8192}};
  parsed = read_model_config(write("config.json", config.dump()));
  EXPECT_EQ(parsed.rope_theta, 500000.0);
  EXPECT_EQ(parsed.rope_scaling.kind, RopeScaling::Kind::kLlama3);
  EXPECT_EQ(parsed.rope_scaling.factor, 8.0);

  EXPECT_EQ(error_with("rope_parameters", {{"rope_theta", -1}}),
            ":8: field 'rope_parameters.rope_theta': expected a positive number, got number -1");
}

TEST_F(ModelConfigTest, FieldsTheCommandsOnlyCarryAlongAreIgnoredWithAWarning) {
  json config = minimal_config();
  config["bos_token_id"] = -1;
  config["pad_token_id"] = json::array({0});
  config["torch_dtype"] = 16;
  const std::filesystem::path path = write("config.json", config.dump());
  testing::internal::CaptureStderr();
  const ModelConfig parsed = read_model_config(path);
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(parsed.bos_token_id.has_value());
  EXPECT_FALSE(parsed.pad_token_id.has_value());
  EXPECT_EQ(parsed.torch_dtype, "float32");
  const std::string at = "warning: " + path.string() + ":1: field '";
  const std::string ignored = "; ignored (not reported again for this file)\n";
  EXPECT_EQ(warnings, at + "bos_token_id': expected a token id, got number -1" + ignored + at +
                          "pad_token_id': expected a token id, got list" + ignored + at +
                          "torch_dtype': expected a string, got number 16" + ignored);
}

}  // namespace
}  // namespace specgate
