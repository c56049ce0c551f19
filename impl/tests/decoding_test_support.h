#pragma once

// Tiny float64 models, requests, oracle outputs and drafters shared by the decoder tests.

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "fixtures/models/tiny_configs.h"
#include "impl/decoding/model_drafter.h"
#include "impl/decoding/ngram_drafter.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/model/weights.h"
#include "oracle/oracle.h"

namespace specgate::test_support {

inline const auto kFloat64 = at::TensorOptions().dtype(at::kDouble);

struct Models {
  Models()
      : target(tiny_config("qwen3"), random_weights(tiny_config("qwen3"), kFloat64, 21)),
        draft(draft_config(), random_weights(draft_config(), kFloat64, 22)),
        near_target(tiny_config("qwen3"), perturbed(target.weights(), tiny_config("qwen3"), 0.05)) {}
  // The target's weights with relative noise: a draft that mostly agrees, and keeps agreeing
  // with the target's choices after a disagreement.
  static ModelWeights perturbed(ModelWeights weights, const ModelConfig& config, double scale) {
    ModelWeights copy;
    std::vector<WeightSlot> from = weight_slots(config, weights), to = weight_slots(config, copy);
    for (size_t i = 0; i < from.size(); ++i) {
      at::Tensor noise = at::randn(from[i].tensor->sizes(), at::make_generator<at::CPUGeneratorImpl>(90 + i), kFloat64);
      *to[i].tensor = *from[i].tensor + noise * scale * from[i].tensor->std();
    }
    return copy;
  }
  static ModelConfig draft_config() {
    ModelConfig c = tiny_config("qwen3");
    c.num_layers = 1;
    return c;
  }
  Transformer target;
  Transformer draft;
  Transformer near_target;
};

inline const Models& models() {
  static const Models instance;
  return instance;
}

inline std::vector<SequenceRequest> mixed_requests(int64_t batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<SequenceRequest> requests;
  for (int64_t i = 0; i < batch; ++i) {
    SequenceRequest& r = requests.emplace_back();
    r.sequence_index = 100 + i;
    const int64_t length = 1 + static_cast<int64_t>(rng() % 17);
    for (int64_t j = 0; j < length; ++j) r.prompt.push_back(static_cast<int64_t>(rng() % 256));
  }
  return requests;
}

inline std::map<int64_t, std::vector<int64_t>> oracle_outputs(const std::vector<SequenceRequest>& requests,
                                                       const DecodeOptions& options) {
  std::map<int64_t, std::vector<int64_t>> out;
  for (const SequenceRequest& r : requests) {
    out[r.sequence_index] = oracle_generate(models().target, r.prompt,
                                            {.max_new_tokens = options.max_new_tokens, .eos_ids = options.eos_ids,
                                             .top_logprobs = 0},
                                            0)
                                .tokens;
  }
  return out;
}

// kScriptedRagged proposes 0 to K of its scripted tokens a round; kNgram looks them up.
enum class DrafterKind { kModel, kNearTarget, kScripted, kScriptedWithModel, kScriptedRagged, kNgram };

struct Scenario {
  int64_t batch;
  int64_t k;
  DrafterKind drafter;
  std::string script;  // all-accept, all-reject, one-row-rejects, random
};

inline AcceptanceScript make_script(const std::string& name, int64_t k) {
  if (name == "all-accept") return [k](int64_t, int64_t) { return k; };
  if (name == "all-reject") return [](int64_t, int64_t) { return int64_t{0}; };
  if (name == "one-row-rejects") return [k](int64_t sequence, int64_t) { return sequence == 100 ? int64_t{0} : k; };
  return [k](int64_t sequence, int64_t round) { return static_cast<int64_t>((sequence * 7 + round * 13) % (k + 1)); };
}

inline DecodeOptions greedy_options(int64_t k, int64_t max_new = 12) {
  DecodeOptions o;
  o.draft_tokens = k;
  o.max_new_tokens = max_new;
  o.check_invariants = true;
  return o;
}

// The drafter a scenario names; `script` must outlive it.
inline std::unique_ptr<Drafter> make_drafter(DrafterKind kind, const ScriptedDrafts& script) {
  switch (kind) {
    case DrafterKind::kModel:
      return std::make_unique<ModelDrafter>(models().draft);
    case DrafterKind::kNearTarget:
      return std::make_unique<ModelDrafter>(models().near_target);
    case DrafterKind::kScripted:
      return std::make_unique<ScriptedDrafter>(script);
    case DrafterKind::kScriptedWithModel:
      return std::make_unique<ModelDrafter>(models().draft, &script);
    case DrafterKind::kScriptedRagged:
      return std::make_unique<ScriptedDrafter>(
          script, [](int64_t sequence, int64_t round) { return (sequence * 5 + round * 3) % 4; });
    case DrafterKind::kNgram:
      return std::make_unique<NgramDrafter>(NgramOptions{.min_n = 1, .max_n = 2});
  }
  return nullptr;
}

// Scripted drafts along the oracle's outputs, which run K + 1 tokens past max_new_tokens so
// that every scripted round is exact.
inline ScriptedDrafts oracle_script(const std::vector<SequenceRequest>& requests, const DecodeOptions& options,
                                    const std::string& script) {
  DecodeOptions longer = options;
  longer.max_new_tokens += options.draft_tokens + 1;
  return {oracle_outputs(requests, longer), make_script(script, options.draft_tokens), 259};
}

inline std::map<int64_t, std::vector<int64_t>> by_sequence(const std::vector<SequenceResult>& results) {
  std::map<int64_t, std::vector<int64_t>> out;
  for (const SequenceResult& r : results) out[r.sequence_index] = r.tokens;
  return out;
}

// Checks that every sequence kept exactly what the "random" script for K granted each round
// (one more token: the bonus), the last round possibly cut by max_new_tokens, and that the
// counters add up.
inline void expect_scripted_acceptance(const std::vector<SequenceResult>& results, const DecodeStats& stats,
                                       const DecodeOptions& options) {
  const AcceptanceScript script = make_script("random", options.draft_tokens);
  int64_t accepted = 0;
  for (const SequenceResult& r : results) {
    ASSERT_FALSE(r.accept_lengths.empty());
    int64_t total = 1;  // the first token comes from the prompt pass
    for (size_t round = 0; round < r.accept_lengths.size(); ++round) {
      const int64_t scripted = std::min(script(r.sequence_index, static_cast<int64_t>(round)), options.draft_tokens);
      if (round + 1 < r.accept_lengths.size()) {
        EXPECT_EQ(r.accept_lengths[round], scripted + 1) << "sequence " << r.sequence_index << " round " << round;
      } else {
        EXPECT_LE(r.accept_lengths[round], scripted + 1);  // cut by max_new_tokens
      }
      accepted += scripted;
      total += r.accept_lengths[round];
    }
    EXPECT_EQ(total, options.max_new_tokens);
  }
  EXPECT_EQ(stats.generated, static_cast<int64_t>(results.size()) * options.max_new_tokens);
  EXPECT_EQ(stats.accepted, accepted);
}

}  // namespace specgate::test_support
