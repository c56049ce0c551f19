#include "impl/model/config.h"

#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/ignored_field.h"
#include "impl/common/json_scan.h"
#include "impl/common/json_value.h"

namespace specgate {
namespace {

using nlohmann::json;

// The fields of one object of a config file, at `path` in it; messages name the file, the
// line (when `text` locates the field) and the field: "config.json:3: field 'vocab_size': ...".
class FieldReader {
 public:
  FieldReader(const json& object, const std::string& source, std::string_view text, std::vector<std::string> path = {})
      : object_(object), source_(source), text_(text), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(field_message(source_, text_, path_to(field), name(field), what));
  }

  // The reader of the object in `field`.
  FieldReader object(const std::string& field) const {
    const json& value = object_.at(field);
    if (!value.is_object()) fail(field, "expected an object, got " + describe_json(value));
    return FieldReader(value, source_, text_, path_to(field));
  }

  bool has(const std::string& field) const {
    return object_.contains(field) && !object_.at(field).is_null();
  }

  int64_t positive_int(const std::string& field) const {
    if (!has(field)) fail(field, "missing");
    return integer(field, 1);
  }

  int64_t non_negative_int_or(const std::string& field, int64_t fallback) const {
    return has(field) ? integer(field, 0) : fallback;
  }

  int64_t positive_int_or(const std::string& field, int64_t fallback) const {
    return has(field) ? positive_int(field) : fallback;
  }

  double positive_number_or(const std::string& field, double fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_.at(field);
    const std::optional<double> v = json_number(value);
    if (!v || !(*v > 0)) fail(field, "expected a positive number, got " + describe_json(value));
    return *v;
  }

  bool bool_or(const std::string& field, bool fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_.at(field);
    if (!value.is_boolean()) fail(field, "expected true or false, got " + describe_json(value));
    return value.get<bool>();
  }

  // For a field the commands only carry along (written back by to_json): a value that is not a
  // token id is ignored with a warning.
  std::optional<int64_t> unused_token(const std::string& field) const {
    if (!has(field)) return std::nullopt;
    const std::optional<int64_t> id = json_integer(object_.at(field), 0, kMaxSize);
    if (!id) warn_ignored_field(source_, line_of(field), name(field), integer_problem(object_.at(field), 0, kMaxSize, "a token id"));
    return id;
  }

  std::vector<int64_t> token_list(const std::string& field) const {
    if (!has(field)) return {};
    const json& value = object_.at(field);
    if (!value.is_array()) return {integer(field, 0, "a token id or a list of them")};
    std::vector<int64_t> ids;
    for (const json& id : value) {
      const std::optional<int64_t> checked = json_integer(id, 0, kMaxSize);
      if (!checked) fail(field, integer_problem(id, 0, kMaxSize, "token ids"));
      ids.push_back(*checked);
    }
    return ids;
  }

  std::string string_or(const std::string& field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_.at(field);
    if (!value.is_string()) fail(field, "expected a string, got " + describe_json(value));
    return value.get<std::string>();
  }

  // For a field the commands only carry along: a value that is not a string is ignored with a warning.
  std::string unused_string_or(const std::string& field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_.at(field);
    if (value.is_string()) return value.get<std::string>();
    warn_ignored_field(source_, line_of(field), name(field), "expected a string, got " + describe_json(value));
    return fallback;
  }

 private:
  // Sizes and ids up to 2^31 - 1, so that products of two stay within int64.
  static constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();

  int64_t integer(const std::string& field, int64_t low, const std::string& expected = "") const {
    const json& value = object_.at(field);
    const std::optional<int64_t> v = json_integer(value, low, kMaxSize);
    if (!v) fail(field, integer_problem(value, low, kMaxSize, expected));
    return *v;
  }

  std::string name(const std::string& field) const {
    std::string name;
    for (const std::string& key : path_) name += key + ".";
    return name + field;
  }

  std::vector<std::string> path_to(const std::string& field) const {
    std::vector<std::string> path = path_;
    path.push_back(field);
    return path;
  }

  std::optional<int64_t> line_of(const std::string& field) const {
    return text_.empty() ? std::nullopt : json_value_line(text_, path_to(field));
  }

  const json& object_;
  const std::string& source_;
  std::string_view text_;
  std::vector<std::string> path_;  // the keys that lead to the object
};

// `rope_scaling` of transformers 4's configs, or `rope_parameters` of transformers 5's, which
// also holds rope_theta.
RopeScaling parse_rope_scaling(const FieldReader& top) {
  RopeScaling scaling;
  const char* name = top.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!top.has(name)) return scaling;
  const FieldReader fields = top.object(name);
  const std::string type = fields.string_or("rope_type", fields.string_or("type", "default"));
  if (type == "default") return scaling;
  scaling.factor = fields.positive_number_or("factor", 1.0);
  if (type == "linear") {
    scaling.kind = RopeScaling::Kind::kLinear;
  } else if (type == "llama3") {
    scaling.kind = RopeScaling::Kind::kLlama3;
    scaling.low_freq_factor = fields.positive_number_or("low_freq_factor", 1.0);
    scaling.high_freq_factor = fields.positive_number_or("high_freq_factor", 4.0);
    scaling.original_max_position_embeddings =
        fields.positive_int_or("original_max_position_embeddings", 8192);
    if (scaling.high_freq_factor <= scaling.low_freq_factor)
      fields.fail("high_freq_factor", "must exceed low_freq_factor");
  } else {
    fields.fail(fields.has("rope_type") ? "rope_type" : "type", "unsupported rope scaling '" + type + "' (supported: default, linear, llama3)");
  }
  return scaling;
}

}  // namespace

ModelConfig parse_model_config(const json& config, const std::string& source, std::string_view text) {
  if (!config.is_object()) throw InputError(source + ": expected a JSON object");
  const FieldReader fields(config, source, text);
  ModelConfig c;
  c.model_type = fields.string_or("model_type", "");
  if (c.model_type.empty()) fields.fail("model_type", "missing");
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2" &&
      c.model_type != "qwen3") {
    fields.fail("model_type", "unsupported model type '" + c.model_type +
                                  "' (supported: llama, mistral, qwen2, qwen3)");
  }
  c.vocab_size = fields.positive_int("vocab_size");
  c.hidden_size = fields.positive_int("hidden_size");
  c.intermediate_size = fields.positive_int("intermediate_size");
  c.num_layers = fields.positive_int("num_hidden_layers");
  c.num_heads = fields.positive_int("num_attention_heads");
  c.num_kv_heads = fields.positive_int_or("num_key_value_heads", c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0)
    fields.fail("num_key_value_heads", "must divide num_attention_heads");
  if (!fields.has("head_dim") && c.hidden_size % c.num_heads != 0)
    fields.fail("num_attention_heads", "must divide hidden_size when head_dim is absent");
  c.head_dim = fields.positive_int_or("head_dim", c.hidden_size / c.num_heads);
  if (c.head_dim % 2 != 0) fields.fail("head_dim", "must be even for rotary embeddings");
  c.rms_norm_eps = fields.positive_number_or("rms_norm_eps", 1e-6);
  c.rope_theta = (fields.has("rope_parameters") ? fields.object("rope_parameters") : fields)
                     .positive_number_or("rope_theta", 10000.0);
  c.rope_scaling = parse_rope_scaling(fields);
  c.max_position_embeddings = fields.positive_int_or("max_position_embeddings", 4096);
  c.tie_word_embeddings = fields.bool_or("tie_word_embeddings", false);
  const std::string activation = fields.string_or("hidden_act", "silu");
  if (activation != "silu") fields.fail("hidden_act", "unsupported activation '" + activation + "' (supported: silu)");

  const bool attention_bias = fields.bool_or("attention_bias", false);
  if (fields.bool_or("mlp_bias", false)) fields.fail("mlp_bias", "MLP biases are not supported");
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;
  } else {
    c.qkv_bias = attention_bias;
    c.o_bias = attention_bias;
  }
  c.qk_norm = c.model_type == "qwen3";

  const bool windowed = c.model_type == "mistral" ||
                        (c.model_type.starts_with("qwen") && fields.bool_or("use_sliding_window", false));
  if (windowed && fields.has("sliding_window")) {
    c.sliding_window = fields.positive_int("sliding_window");
    // Qwen windows only the layers from max_window_layers on (transformers' default: 28).
    if (c.model_type != "mistral") c.max_window_layers = fields.non_negative_int_or("max_window_layers", 28);
  }

  c.bos_token_id = fields.unused_token("bos_token_id");
  c.eos_token_ids = fields.token_list("eos_token_id");
  c.pad_token_id = fields.unused_token("pad_token_id");
  for (int64_t id : c.eos_token_ids) {
    if (id >= c.vocab_size) fields.fail("eos_token_id", "outside the vocabulary");
  }
  c.torch_dtype = fields.unused_string_or("torch_dtype", "float32");
  return c;
}

ModelConfig read_model_config(const std::filesystem::path& config_json) {
  const JsonFile file = read_json_file(config_json);
  return parse_model_config(file.value, file.name, file.text);
}

std::vector<int64_t> read_eos_token_ids(const std::filesystem::path& dir, const ModelConfig& config) {
  const std::filesystem::path path = dir / "generation_config.json";
  if (!std::filesystem::exists(path)) return config.eos_token_ids;
  const JsonFile file = read_json_file(path);
  if (!file.value.is_object()) throw InputError(file.name + ": expected a JSON object");
  const FieldReader fields(file.value, file.name, file.text);
  if (!fields.has("eos_token_id")) return config.eos_token_ids;
  const std::vector<int64_t> ids = fields.token_list("eos_token_id");
  for (int64_t id : ids) {
    if (id < 0 || id >= config.vocab_size)
      fields.fail("eos_token_id", std::to_string(id) + " is outside the vocabulary (" + std::to_string(config.vocab_size) + " tokens)");
  }
  return ids;
}

json to_json(const ModelConfig& c) {
  json out = {
      {"architectures", json::array()},
      {"model_type", c.model_type},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta},
      {"max_position_embeddings", c.max_position_embeddings},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"hidden_act", "silu"},
      {"torch_dtype", c.torch_dtype},
  };
  static const std::map<std::string, std::string> kArchitecture = {
      {"llama", "LlamaForCausalLM"}, {"mistral", "MistralForCausalLM"},
      {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"}};
  out["architectures"].push_back(kArchitecture.at(c.model_type));
  if (c.model_type != "qwen2") out["attention_bias"] = c.qkv_bias;
  if (c.sliding_window) {
    out["sliding_window"] = *c.sliding_window;
    if (c.model_type != "mistral") {
      out["use_sliding_window"] = true;
      out["max_window_layers"] = c.max_window_layers;
    }
  }
  switch (c.rope_scaling.kind) {
    case RopeScaling::Kind::kNone:
      break;
    case RopeScaling::Kind::kLinear:
      out["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_scaling.factor}};
      break;
    case RopeScaling::Kind::kLlama3:
      out["rope_scaling"] = {
          {"rope_type", "llama3"},
          {"factor", c.rope_scaling.factor},
          {"low_freq_factor", c.rope_scaling.low_freq_factor},
          {"high_freq_factor", c.rope_scaling.high_freq_factor},
          {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
      break;
  }
  if (c.bos_token_id) out["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_ids.size() == 1) out["eos_token_id"] = c.eos_token_ids.front();
  if (c.eos_token_ids.size() > 1) out["eos_token_id"] = c.eos_token_ids;
  if (c.pad_token_id) out["pad_token_id"] = *c.pad_token_id;
  return out;
}

}  // namespace specgate
