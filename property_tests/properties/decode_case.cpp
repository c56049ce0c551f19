#include "property_tests/properties/decode_case.h"

#include <algorithm>
#include <array>
#include <ostream>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/json_value.h"
#include "impl/decoding/token_tree.h"

namespace specgate::props {
namespace {

using nlohmann::json;

// Reads fields of one JSON object, failing with "source: field 'path': what".
class Fields {
 public:
  Fields(const json& object, std::string source, std::string prefix = "")
      : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {
    if (!object_.is_object()) fail("", "expected an object");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    const std::string name = prefix_ + field;
    throw InputError(source_ + (name.empty() ? "" : ": field '" + name + "'") + ": " + what);
  }
  bool has(const std::string& field) const { return object_.contains(field) && !object_.at(field).is_null(); }
  const json& at(const std::string& field) const {
    if (!object_.contains(field)) fail(field, "missing");
    return object_.at(field);
  }
  Fields object(const std::string& field) const { return Fields(at(field), source_, prefix_ + field + "."); }

  int64_t integer(const std::string& field, int64_t low, int64_t high) const {
    const json& value = at(field);
    const std::optional<int64_t> v = json_integer(value, low, high);
    if (!v) fail(field, integer_problem(value, low, high));
    return *v;
  }
  uint64_t unsigned_integer(const std::string& field) const {
    const json& value = at(field);
    const std::optional<uint64_t> v = json_unsigned(value);
    if (!v) fail(field, "expected a non-negative integer, got " + describe_json(value));
    return *v;
  }
  double number(const std::string& field) const {
    const json& value = at(field);
    const std::optional<double> v = json_number(value);
    if (!v) fail(field, "expected a number, got " + describe_json(value));
    return *v;
  }
  bool boolean(const std::string& field) const {
    const json& value = at(field);
    if (!value.is_boolean()) fail(field, "expected true or false, got " + describe_json(value));
    return value.get<bool>();
  }
  std::string string(const std::string& field) const {
    const json& value = at(field);
    if (!value.is_string()) fail(field, "expected a string, got " + describe_json(value));
    return value.get<std::string>();
  }
  std::vector<std::vector<int64_t>> rows(const std::string& field, int64_t low, int64_t high) const {
    const json& value = at(field);
    if (!value.is_array()) fail(field, "expected an array of arrays of integers");
    std::vector<std::vector<int64_t>> out;
    for (size_t i = 0; i < value.size(); ++i) out.push_back(integers(value[i], field + "[" + std::to_string(i) + "]", low, high));
    return out;
  }
  std::vector<int64_t> row(const std::string& field, int64_t low, int64_t high) const {
    return integers(at(field), field, low, high);
  }

 private:
  std::vector<int64_t> integers(const json& value, const std::string& field, int64_t low, int64_t high) const {
    if (!value.is_array()) fail(field, "expected an array of integers");
    std::vector<int64_t> ids;
    for (const json& id : value) {
      const std::optional<int64_t> v = json_integer(id, low, high);
      if (!v) fail(field + "[" + std::to_string(ids.size()) + "]", integer_problem(id, low, high));
      ids.push_back(*v);
    }
    return ids;
  }

  const json& object_;
  std::string source_;
  std::string prefix_;
};

json model_to_json(const ModelSpec& m) {
  return {{"family", m.family}, {"layers", m.layers},     {"heads", m.heads},     {"kv_heads", m.kv_heads},
          {"head_dim", m.head_dim}, {"hidden", m.hidden}, {"vocab", m.vocab},     {"qk_norm", m.qk_norm},
          {"qkv_bias", m.qkv_bias}, {"sliding_window", m.sliding_window ? json(*m.sliding_window) : json(nullptr)},
          {"seed", m.seed}};
}

ModelSpec model_from_json(const Fields& f) {
  ModelSpec m;
  m.family = f.string("family");
  if (m.family != "llama" && m.family != "mistral" && m.family != "qwen2" && m.family != "qwen3")
    f.fail("family", "unknown family '" + m.family + "' (known: llama, mistral, qwen2, qwen3)");
  m.layers = f.integer("layers", 1, 8);
  m.kv_heads = f.integer("kv_heads", 1, 16);
  m.heads = f.integer("heads", 1, 64);
  if (m.heads % m.kv_heads != 0) f.fail("heads", "must be a multiple of kv_heads");
  m.head_dim = f.integer("head_dim", 2, 64);
  if (m.head_dim % 2 != 0) f.fail("head_dim", "must be even");
  m.hidden = f.integer("hidden", 2, 256);
  m.vocab = f.integer("vocab", 2, 4096);
  m.qk_norm = f.boolean("qk_norm");
  m.qkv_bias = f.boolean("qkv_bias");
  if (f.has("sliding_window")) m.sliding_window = f.integer("sliding_window", 1, 4096);
  m.seed = f.unsigned_integer("seed");
  return m;
}

template <typename Enum, size_t N>
Enum enum_from_name(const Fields& f, const std::string& field, const std::array<Enum, N>& values,
                    std::string_view (*name)(Enum)) {
  const std::string text = f.string(field);
  std::string known;
  for (Enum value : values) {
    if (name(value) == text) return value;
    known += (known.empty() ? "" : ", ") + std::string(name(value));
  }
  f.fail(field, "unknown value '" + text + "' (known: " + known + ")");
}

constexpr std::array kDecoders = {DecoderKind::kEqspec, DecoderKind::kExspec};
constexpr std::array kDraftKinds = {DraftKind::kScriptedModel, DraftKind::kScriptOnly, DraftKind::kNearTarget,
                                    DraftKind::kIndependent, DraftKind::kNgram};

// Row `row`'s entry for `round` of a per-round table (later rounds repeat the last), clamped
// to [0, k]; k for a row without entries.
int64_t per_round(const std::vector<std::vector<int64_t>>& table, int64_t row, int64_t round, int64_t k) {
  if (static_cast<size_t>(row) >= table.size() || table[row].empty()) return k;
  const std::vector<int64_t>& rounds = table[row];
  return std::clamp<int64_t>(rounds[std::min<size_t>(round, rounds.size() - 1)], 0, k);
}

}  // namespace

ModelConfig ModelSpec::config() const {
  ModelConfig c;
  c.model_type = family;
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = 2 * hidden;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.max_position_embeddings = 512;
  c.sliding_window = sliding_window;
  c.qk_norm = qk_norm;
  c.qkv_bias = qkv_bias;
  c.bos_token_id = 1;
  c.eos_token_ids = {std::min<int64_t>(2, vocab - 1)};
  c.pad_token_id = 0;
  c.torch_dtype = "float64";
  return c;
}

int64_t DecodeCase::draft_length(int64_t row, int64_t round) const { return per_round(draft_lengths, row, round, k); }

int64_t DecodeCase::scripted_accepts(int64_t row, int64_t round) const {
  return per_round(script, row, round, draft_length(row, round));
}

std::string_view decoder_name(DecoderKind kind) { return kind == DecoderKind::kEqspec ? "eqspec" : "exspec"; }

std::string_view draft_kind_name(DraftKind kind) {
  switch (kind) {
    case DraftKind::kScriptedModel:
      return "scripted-model";
    case DraftKind::kScriptOnly:
      return "script-only";
    case DraftKind::kNearTarget:
      return "near-target";
    case DraftKind::kIndependent:
      return "independent";
    case DraftKind::kNgram:
      return "ngram";
  }
  return "";
}

json to_json(const DecodeCase& c) {
  json out = {
      {"target", model_to_json(c.target)},
      {"draft", {{"kind", draft_kind_name(c.draft)}, {"seed", c.draft_seed}, {"noise", c.draft_noise}}},
      {"prompts", c.prompts},
      {"k", c.k},
      {"max_new_tokens", c.max_new_tokens},
      {"script_kind", c.script_kind},
      {"script", c.script},
      {"lengths_kind", c.lengths_kind},
      {"draft_lengths", c.draft_lengths},
      {"ngram_max", c.ngram_max},
      {"eos", c.eos ? json{{"row", c.eos->row}, {"step", c.eos->step}} : json(nullptr)},
      {"decoder", decoder_name(c.decoder)},
      {"sampling",
       {{"temperature", c.sampling.temperature}, {"top_k", c.sampling.top_k}, {"top_p", c.sampling.top_p},
        {"min_p", c.sampling.min_p}, {"seed", c.sampling.seed}}},
      {"watched_row", c.watched_row},
      {"replacements", c.replacements},
  };
  if (c.decoder == DecoderKind::kExspec) {
    out["exspec"] = {{"batch_size", c.exspec.batch_size},
                     {"window", c.exspec.window},
                     {"sort_by_prompt_length", c.exspec.sort_by_prompt_length},
                     {"max_wait_steps", c.exspec.max_wait_steps}};
  }
  if (!c.trees.empty()) out["trees"] = c.trees;
  return out;
}

DecodeCase decode_case_from_json(const json& object, const std::string& source) {
  const Fields f(object, source);
  DecodeCase c;
  c.target = model_from_json(f.object("target"));
  const Fields draft = f.object("draft");
  c.draft = enum_from_name(draft, "kind", kDraftKinds, draft_kind_name);
  c.draft_seed = draft.unsigned_integer("seed");
  c.draft_noise = draft.number("noise");
  c.prompts = f.rows("prompts", 0, c.target.vocab - 1);
  if (c.prompts.empty()) f.fail("prompts", "needs at least one prompt");
  for (const auto& prompt : c.prompts) {
    if (prompt.empty()) f.fail("prompts", "every prompt needs at least one token");
  }
  c.k = f.integer("k", 1, 64);
  c.max_new_tokens = f.integer("max_new_tokens", 1, 256);
  c.script_kind = f.string("script_kind");
  c.script = f.rows("script", 0, c.k);
  if (c.script.size() != c.prompts.size()) f.fail("script", "needs one row per prompt");
  if (f.has("lengths_kind")) c.lengths_kind = f.string("lengths_kind");
  if (f.has("draft_lengths")) {
    c.draft_lengths = f.rows("draft_lengths", 0, c.k);
    if (!c.draft_lengths.empty() && c.draft_lengths.size() != c.prompts.size())
      f.fail("draft_lengths", "needs one row per prompt");
  }
  if (f.has("ngram_max")) c.ngram_max = f.integer("ngram_max", 1, 64);
  if (f.has("eos")) {
    const Fields eos = f.object("eos");
    c.eos = EosSpec{eos.integer("row", 0, c.batch_size() - 1), eos.integer("step", 0, c.max_new_tokens - 1)};
  }
  c.decoder = enum_from_name(f, "decoder", kDecoders, decoder_name);
  if (c.decoder == DecoderKind::kExspec) {
    const Fields e = f.object("exspec");
    c.exspec.batch_size = e.integer("batch_size", 1, 4096);
    c.exspec.window = e.integer("window", c.exspec.batch_size, 4096);
    c.exspec.sort_by_prompt_length = e.boolean("sort_by_prompt_length");
    c.exspec.max_wait_steps = e.integer("max_wait_steps", 0, 1 << 20);
  }
  const Fields s = f.object("sampling");
  c.sampling.temperature = s.number("temperature");
  c.sampling.top_k = s.integer("top_k", 0, c.target.vocab);
  c.sampling.top_p = s.number("top_p");
  if (s.has("min_p")) c.sampling.min_p = s.number("min_p");
  c.sampling.seed = s.unsigned_integer("seed");
  if (!(c.sampling.temperature >= 0.0)) s.fail("temperature", "must be >= 0");
  if (!(c.sampling.top_p > 0.0 && c.sampling.top_p <= 1.0)) s.fail("top_p", "must be in (0, 1]");
  if (!(c.sampling.min_p >= 0.0 && c.sampling.min_p <= 1.0)) s.fail("min_p", "must be in [0, 1]");
  if (f.has("trees")) {
    c.trees = f.rows("trees", -1, 1 << 10);
    if (c.trees.empty()) f.fail("trees", "needs a tree");
    for (const std::vector<int64_t>& parents : c.trees) {
      try {
        if (TreeShape(parents).max_depth() > c.k) f.fail("trees", "deeper than k");
      } catch (const InputError& e) {
        if (std::string(e.what()).starts_with(source)) throw;
        f.fail("trees", e.what());
      }
    }
  }
  c.watched_row = f.integer("watched_row", 0, c.batch_size() - 1);
  c.replacements = f.rows("replacements", 0, c.target.vocab - 1);
  if (c.replacements.size() != c.prompts.size()) f.fail("replacements", "needs one prompt per row");
  for (const auto& prompt : c.replacements) {
    if (prompt.empty()) f.fail("replacements", "every prompt needs at least one token");
  }
  return c;
}

json summary(const DecodeCase& c) {
  std::vector<int64_t> lengths;
  for (const auto& prompt : c.prompts) lengths.push_back(static_cast<int64_t>(prompt.size()));
  json out = {{"batch_size", c.batch_size()},
              {"prompt_lengths", lengths},
              {"k", c.k},
              {"max_new_tokens", c.max_new_tokens},
              {"decoder", decoder_name(c.decoder)},
              {"mode", c.sampling.greedy() ? "greedy" : "sampling"},
              {"draft", draft_kind_name(c.draft)}};
  if (c.scripted()) out["script"] = {{"kind", c.script_kind}, {"accepts", c.script}};
  if (c.draft == DraftKind::kScriptOnly && !c.draft_lengths.empty())
    out["draft_lengths"] = {{"kind", c.lengths_kind}, {"lengths", c.draft_lengths}};
  if (c.draft == DraftKind::kNgram) out["ngram_max"] = c.ngram_max;
  if (c.decoder == DecoderKind::kExspec)
    out["exspec"] = {{"batch_size", c.exspec.batch_size}, {"window", c.exspec.window}};
  if (c.eos) out["eos"] = {{"row", c.eos->row}, {"step", c.eos->step}};
  if (!c.trees.empty()) out["trees"] = c.trees;
  return out;
}

void showValue(const DecodeCase& c, std::ostream& os) { os << to_json(c).dump(); }

}  // namespace specgate::props
