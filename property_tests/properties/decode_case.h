#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "impl/decoding/decoder_kind.h"
#include "impl/decoding/exspec.h"
#include "impl/model/config.h"
#include "impl/sampling/sampling.h"

namespace specgate::props {

// A tiny float64 architecture, spelled out so that a case file rebuilds it exactly.
struct ModelSpec {
  std::string family = "qwen3";  // llama, mistral, qwen2, qwen3
  int64_t layers = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t head_dim = 2;
  int64_t hidden = 8;
  int64_t vocab = 32;
  bool qk_norm = false;
  bool qkv_bias = false;
  std::optional<int64_t> sliding_window;
  uint64_t seed = 0;  // of the random weights

  ModelConfig config() const;
};

enum class DraftKind {
  kScriptedModel,  // a one-layer draft model runs every pass, the script chooses its tokens
  kScriptOnly,     // the script alone, no draft model (no draft cache)
  kNearTarget,     // the target's weights plus relative noise, drafting freely
  kIndependent,    // an unrelated one-layer model, drafting freely
  kNgram,          // prompt lookup in each row's own context: 0 to K drafts a row, no model
};

// The EOS id of a case: the token the greedy oracle emits for `row`'s prompt at `step`, so
// that rows really stop early (resolved once; sampling cases use the same id).
struct EosSpec {
  int64_t row = 0;
  int64_t step = 0;
};

// One generated input of the decoding properties. Row i of `prompts` is the sequence with
// index i; its acceptance script is script[i] (drafts right per round; later rounds repeat
// the last entry).
struct DecodeCase {
  ModelSpec target;
  DraftKind draft = DraftKind::kScriptedModel;
  uint64_t draft_seed = 0;
  double draft_noise = 0.0;  // kNearTarget: noise std relative to each weight's std

  std::vector<std::vector<int64_t>> prompts;
  int64_t k = 1;
  int64_t max_new_tokens = 1;
  std::string script_kind;  // how `script` was generated: all-accept, all-reject, alternating, ...
  std::vector<std::vector<int64_t>> script;
  // kScriptOnly: tokens each row proposes per round (later rounds repeat the last entry; K
  // for a row without entries), generated as `lengths_kind`: full, all-empty, one-row-full, random.
  std::string lengths_kind = "full";
  std::vector<std::vector<int64_t>> draft_lengths;
  int64_t ngram_max = 3;  // kNgram: the longest n-gram matched (the shortest is 1)
  std::optional<EosSpec> eos;

  DecoderKind decoder = DecoderKind::kEqspec;
  ExspecOptions exspec;
  // A tree decoder's draft trees, as parents (TreeShape), sequence j drafting trees[j % size];
  // none: chains. Their depth is at most K, and the script says how deep each round's right
  // branch is right.
  std::vector<std::vector<int64_t>> trees;
  SamplingParams sampling;  // greedy when temperature is 0

  // Row isolation: the watched row and, for every other row, the prompt that replaces it.
  int64_t watched_row = 0;
  std::vector<std::vector<int64_t>> replacements;

  int64_t batch_size() const { return static_cast<int64_t>(prompts.size()); }
  bool scripted() const { return draft == DraftKind::kScriptedModel || draft == DraftKind::kScriptOnly; }
  // Tokens sequence `row` proposes in its `round`-th round (0-based), at most K.
  int64_t draft_length(int64_t row, int64_t round) const;
  // Drafts sequence `row` gets right in its `round`-th round, at most its draft length.
  int64_t scripted_accepts(int64_t row, int64_t round) const;
};

std::string_view decoder_name(DecoderKind kind);
std::string_view draft_kind_name(DraftKind kind);

nlohmann::json to_json(const DecodeCase& c);
// Throws InputError naming `source` and the field.
DecodeCase decode_case_from_json(const nlohmann::json& json, const std::string& source);

// The shape of a counterexample in a few fields: batch size, prompt lengths, K, new tokens,
// decoder, mode and script.
nlohmann::json summary(const DecodeCase& c);

// RapidCheck prints counterexamples with this (found by argument-dependent lookup).
void showValue(const DecodeCase& c, std::ostream& os);

}  // namespace specgate::props
