#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fixtures/models/tiny_configs.h"
#include "impl/checkpoint/model_io.h"
#include "impl/checkpoint/safetensors.h"
#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"
#include "impl/model/weights.h"

namespace specgate {
namespace {

class CheckpointFolder : public TempFolderTest {
 protected:

  Transformer save(const ModelConfig& config, at::ScalarType dtype = at::kDouble) {
    Transformer model(config, random_weights(config, at::TensorOptions().dtype(dtype), 3));
    save_transformer(dir_, model);
    return model;
  }

  // Rewrites model.safetensors with `edit` applied to its tensors.
  void edit_tensors(const std::function<void(std::vector<std::pair<std::string, at::Tensor>>&)>& edit) {
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    {
      const safetensors::File file = safetensors::File::open(dir_ / "model.safetensors");
      for (const std::string& name : file.names()) tensors.emplace_back(name, file.tensor(name).clone());
    }
    edit(tensors);
    safetensors::write(dir_ / "model.safetensors", tensors);
  }

  void edit_config(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json config = nlohmann::json::parse(std::ifstream(dir_ / "config.json"));
    edit(config);
    std::ofstream(dir_ / "config.json") << config.dump();
  }

  std::string load_error() {
    try {
      load_transformer(dir_, at::kDouble, at::kCPU);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "loading succeeded";
    return "";
  }

};

TEST_F(CheckpointFolder, EveryVariantRoundTripsExactly) {
  for (const NamedConfig& variant : tiny_variants()) {
    SCOPED_TRACE(variant.name);
    remove_tree(dir_);
    const Transformer saved = save(variant.config);
    const Transformer loaded = load_transformer(dir_, at::kDouble, at::kCPU);
    ModelConfig expected = saved.config();
    expected.torch_dtype = "float64";  // save_transformer records the dtype the weights have
    EXPECT_EQ(to_json(loaded.config()), to_json(expected));
    ModelWeights a = saved.weights(), b = loaded.weights();
    const auto slots_a = weight_slots(saved.config(), a), slots_b = weight_slots(loaded.config(), b);
    ASSERT_EQ(slots_a.size(), slots_b.size());
    for (size_t i = 0; i < slots_a.size(); ++i) EXPECT_TRUE(at::equal(*slots_a[i].tensor, *slots_b[i].tensor)) << slots_a[i].name;
    EXPECT_EQ(loaded.weights().lm_head.data_ptr() == loaded.weights().embed_tokens.data_ptr(),
              variant.config.tie_word_embeddings);
  }
}

TEST_F(CheckpointFolder, LoadsIntoTheRequestedDtype) {
  save(tiny_config("qwen3"), at::kFloat);
  const Transformer model = load_transformer(dir_, at::kBFloat16, at::kCPU);
  EXPECT_EQ(model.weights().layers[1].q_norm.scalar_type(), at::kBFloat16);
}

TEST_F(CheckpointFolder, MissingTensorIsNamed) {
  save(tiny_config("qwen2"));
  edit_tensors([](auto& tensors) { std::erase_if(tensors, [](auto& t) { return t.first == "model.layers.1.self_attn.k_proj.bias"; }); });
  EXPECT_NE(load_error().find("'model.layers.1.self_attn.k_proj.bias' is missing"), std::string::npos);
}

TEST_F(CheckpointFolder, MisshapenTensorIsNamedWithBothShapes) {
  save(tiny_config("llama"));
  edit_tensors([](auto& tensors) {
    for (auto& [name, tensor] : tensors)
      if (name == "model.norm.weight") tensor = at::ones({31}, at::kDouble);
  });
  const std::string error = load_error();
  EXPECT_NE(error.find("model.safetensors: tensor 'model.norm.weight': expected shape [32]"), std::string::npos) << error;
  EXPECT_NE(error.find("got [31]"), std::string::npos) << error;
}

TEST_F(CheckpointFolder, IntegerTensorIsADtypeError) {
  save(tiny_config("llama"));
  edit_tensors([](auto& tensors) {
    for (auto& [name, tensor] : tensors)
      if (name == "model.norm.weight") tensor = at::ones({32}, at::kInt);
  });
  EXPECT_NE(load_error().find("'model.norm.weight': expected a floating-point dtype"), std::string::npos);
}

TEST_F(CheckpointFolder, UnexpectedTensorIsNamed) {
  save(tiny_config("llama"));
  edit_tensors([](auto& tensors) { tensors.emplace_back("model.layers.0.mlp.experts.0.weight", at::ones({2})); });
  EXPECT_NE(load_error().find("'model.layers.0.mlp.experts.0.weight' is not part of"), std::string::npos);
}

TEST_F(CheckpointFolder, RotaryBuffersAndTiedHeadsAreTolerated) {
  ModelConfig config = tiny_config("llama");
  config.tie_word_embeddings = true;
  save(config);
  edit_tensors([](auto& tensors) {
    tensors.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", at::ones({4}));
    tensors.emplace_back("lm_head.weight", at::zeros({259, 32}, at::kDouble));
  });
  EXPECT_NO_THROW(load_transformer(dir_, at::kDouble, at::kCPU));
}

TEST_F(CheckpointFolder, ConfigErrorsNameTheField) {
  save(tiny_config("llama"));
  edit_config([](nlohmann::json& c) { c["model_type"] = "gpt2"; });
  EXPECT_NE(load_error().find("config.json:1: field 'model_type': unsupported model type 'gpt2'"), std::string::npos);
  edit_config([](nlohmann::json& c) {
    c["model_type"] = "llama";
    c["num_key_value_heads"] = 3;
  });
  EXPECT_NE(load_error().find("field 'num_key_value_heads'"), std::string::npos);
  edit_config([](nlohmann::json& c) {
    c["num_key_value_heads"] = 2;
    c.erase("vocab_size");
  });
  EXPECT_NE(load_error().find("field 'vocab_size': missing"), std::string::npos);
  edit_config([](nlohmann::json& c) {
    c["vocab_size"] = "259";
  });
  EXPECT_NE(load_error().find("field 'vocab_size': expected an integer"), std::string::npos);
  edit_config([](nlohmann::json& c) {
    c["vocab_size"] = 259;
    c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  });
  EXPECT_NE(load_error().find("unsupported rope scaling 'yarn'"), std::string::npos);
  std::ofstream(dir_ / "config.json") << "{ not json";
  EXPECT_NE(load_error().find("config.json: not valid JSON"), std::string::npos);
  std::filesystem::remove(dir_ / "config.json");
  EXPECT_NE(load_error().find("config.json: no such file"), std::string::npos);
}

TEST_F(CheckpointFolder, GenerationConfigEosIdsOverrideConfigJsons) {
  ModelConfig config = tiny_config("llama");
  config.eos_token_ids = {5};
  save(config);
  EXPECT_EQ(load_transformer(dir_, at::kDouble, at::kCPU).config().eos_token_ids, std::vector<int64_t>{5});
  std::ofstream(dir_ / "generation_config.json") << R"({"bos_token_id": 1, "eos_token_id": [7, 8]})";
  EXPECT_EQ(load_transformer(dir_, at::kDouble, at::kCPU).config().eos_token_ids, (std::vector<int64_t>{7, 8}));
  std::ofstream(dir_ / "generation_config.json") << R"({"eos_token_id": 9})";
  EXPECT_EQ(load_transformer(dir_, at::kDouble, at::kCPU).config().eos_token_ids, std::vector<int64_t>{9});
  std::ofstream(dir_ / "generation_config.json") << R"({"do_sample": true})";
  EXPECT_EQ(load_transformer(dir_, at::kDouble, at::kCPU).config().eos_token_ids, std::vector<int64_t>{5});
  std::ofstream(dir_ / "generation_config.json") << R"({"eos_token_id": [7, 100000]})";
  EXPECT_NE(load_error().find("generation_config.json:1: field 'eos_token_id': 100000 is outside the vocabulary"),
            std::string::npos);
  std::ofstream(dir_ / "generation_config.json") << R"({"eos_token_id": "7"})";
  EXPECT_NE(load_error().find("generation_config.json:1: field 'eos_token_id': expected a token id or a list"),
            std::string::npos);
  std::ofstream(dir_ / "generation_config.json") << "[1]";
  EXPECT_NE(load_error().find("generation_config.json: expected a JSON object"), std::string::npos);
  std::ofstream(dir_ / "generation_config.json") << "{\"do_sample\": false,\n \"eos_token_id\": 1e400}";
  EXPECT_NE(load_error().find("generation_config.json: not valid JSON at line 2, column 18: number overflow parsing '1e400'"),
            std::string::npos);
}

TEST_F(CheckpointFolder, TruncatedWeightsAreAnInputError) {
  save(tiny_config("llama"));
  const auto file = dir_ / "model.safetensors";
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 100);
  EXPECT_NE(load_error().find("model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace specgate
