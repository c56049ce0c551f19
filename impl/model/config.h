#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace specgate {

// How rotary frequencies are rescaled for long contexts (Hugging Face `rope_scaling`).
struct RopeScaling {
  enum class Kind { kNone, kLinear, kLlama3 };
  Kind kind = Kind::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;                        // llama3
  double high_freq_factor = 4.0;                       // llama3
  int64_t original_max_position_embeddings = 8192;     // llama3
};

// The architecture of a Llama-family decoder, read from a Hugging Face config.json.
struct ModelConfig {
  std::string model_type;  // llama, mistral, qwen2 or qwen3
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 4096;
  std::optional<int64_t> sliding_window;  // keys further back than this are not seen ...
  int64_t max_window_layers = 0;          // ... by the layers from this index on
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // biases on q/k/v projections (Qwen2, Llama attention_bias)
  bool o_bias = false;    // bias on the output projection (Llama attention_bias)
  bool qk_norm = false;   // per-head RMSNorm on q and k before rotary (Qwen3)
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;
  std::string torch_dtype = "float32";  // the dtype the checkpoint declares

  int64_t kv_group_size() const { return num_heads / num_kv_heads; }
  bool layer_uses_window(int64_t layer) const { return sliding_window.has_value() && layer >= max_window_layers; }
};

// Throws InputError naming `source`, the field and its line in `text` (the file's text, when
// given) when a field is missing, mistyped, inconsistent or unsupported.
ModelConfig parse_model_config(const nlohmann::json& json, const std::string& source, std::string_view text = {});
ModelConfig read_model_config(const std::filesystem::path& config_json);
// The ids that end generation for the checkpoint folder `dir` whose config.json gave `config`:
// generation_config.json's eos_token_id (an id or a list, as transformers' generate() uses it)
// when that file has one, else config.json's. InputError naming the file and field when it is
// malformed or an id is outside the vocabulary.
std::vector<int64_t> read_eos_token_ids(const std::filesystem::path& dir, const ModelConfig& config);
// The config.json a Hugging Face loader reads back as the same architecture.
nlohmann::json to_json(const ModelConfig& config);

}  // namespace specgate
