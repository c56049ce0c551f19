#include <map>
#include <random>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "fixtures/models/tiny_configs.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/model_drafter.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/model/weights.h"
#include "oracle/oracle.h"

namespace specgate {
namespace {

const auto kFloat64 = at::TensorOptions().dtype(at::kDouble);

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

const Models& models() {
  static const Models instance;
  return instance;
}

std::vector<SequenceRequest> mixed_requests(int64_t batch, uint64_t seed) {
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

std::map<int64_t, std::vector<int64_t>> oracle_outputs(const std::vector<SequenceRequest>& requests,
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

enum class DrafterKind { kModel, kNearTarget, kScripted, kScriptedWithModel };

struct Scenario {
  int64_t batch;
  int64_t k;
  DrafterKind drafter;
  std::string script;  // all-accept, all-reject, one-row-rejects, random
};

AcceptanceScript make_script(const std::string& name, int64_t k) {
  if (name == "all-accept") return [k](int64_t, int64_t) { return k; };
  if (name == "all-reject") return [](int64_t, int64_t) { return int64_t{0}; };
  if (name == "one-row-rejects") return [k](int64_t sequence, int64_t) { return sequence == 100 ? int64_t{0} : k; };
  return [k](int64_t sequence, int64_t round) { return static_cast<int64_t>((sequence * 7 + round * 13) % (k + 1)); };
}

// Runs EQSPEC with the invariant checker on and returns outputs by sequence.
std::map<int64_t, std::vector<int64_t>> run_eqspec(const std::vector<SequenceRequest>& requests, const Scenario& s,
                                                   const DecodeOptions& options, std::vector<SequenceResult>* results = nullptr,
                                                   DecodeStats* stats = nullptr) {
  // The truth runs K + 1 tokens past max_new_tokens so that every scripted round is exact.
  DecodeOptions longer = options;
  longer.max_new_tokens += s.k + 1;
  ScriptedDrafts script{oracle_outputs(requests, longer), make_script(s.script, s.k), 259};
  std::unique_ptr<Drafter> drafter;
  switch (s.drafter) {
    case DrafterKind::kModel:
      drafter = std::make_unique<ModelDrafter>(models().draft);
      break;
    case DrafterKind::kNearTarget:
      drafter = std::make_unique<ModelDrafter>(models().near_target);
      break;
    case DrafterKind::kScripted:
      drafter = std::make_unique<ScriptedDrafter>(script);
      break;
    case DrafterKind::kScriptedWithModel:
      drafter = std::make_unique<ModelDrafter>(models().draft, &script);
      break;
  }
  const std::vector<SequenceResult> out = eqspec_generate(models().target, *drafter, requests, options, stats);
  std::map<int64_t, std::vector<int64_t>> by_sequence;
  for (const SequenceResult& r : out) by_sequence[r.sequence_index] = r.tokens;
  if (results != nullptr) *results = out;
  return by_sequence;
}

DecodeOptions greedy_options(int64_t k, int64_t max_new = 12) {
  DecodeOptions o;
  o.draft_tokens = k;
  o.max_new_tokens = max_new;
  o.check_invariants = true;
  return o;
}

TEST(Eqspec, GreedyEqualsTheOracleForEveryBatchSizeKAndDrafter) {
  int64_t scenario = 0;
  for (int64_t batch : {1, 2, 3, 5, 8, 16}) {
    for (int64_t k : {1, 2, 3, 5, 8}) {
      for (DrafterKind kind : {DrafterKind::kModel, DrafterKind::kNearTarget, DrafterKind::kScripted,
                               DrafterKind::kScriptedWithModel}) {
        const std::string script = std::vector<std::string>{"all-accept", "all-reject", "one-row-rejects", "random"}[scenario++ % 4];
        SCOPED_TRACE("batch " + std::to_string(batch) + " K " + std::to_string(k) + " drafter " +
                     std::to_string(static_cast<int>(kind)) + " script " + script);
        const std::vector<SequenceRequest> requests = mixed_requests(batch, batch * 10 + k);
        const DecodeOptions options = greedy_options(k);
        EXPECT_EQ(run_eqspec(requests, {batch, k, kind, script}, options), oracle_outputs(requests, options));
      }
    }
  }
}

TEST(Eqspec, EosEndsARowMidRoundExactlyThere) {
  // The EOS is a token the oracle emits a few steps in, so rows stop at different points,
  // often inside a round.
  std::vector<SequenceRequest> requests = mixed_requests(6, 3);
  DecodeOptions options = greedy_options(4, 16);
  const auto free_run = oracle_outputs(requests, options);
  options.eos_ids = {free_run.begin()->second[5]};
  const auto expected = oracle_outputs(requests, options);
  for (const char* script : {"all-accept", "random"}) {
    SCOPED_TRACE(script);
    EXPECT_EQ(run_eqspec(requests, {6, 4, DrafterKind::kScriptedWithModel, script}, options), expected);
  }
  EXPECT_EQ(run_eqspec(requests, {6, 4, DrafterKind::kModel, ""}, options), expected);
}

TEST(Eqspec, ScriptedAcceptanceCountsAreHonoured) {
  const std::vector<SequenceRequest> requests = mixed_requests(5, 9);
  const int64_t k = 3;
  const DecodeOptions options = greedy_options(k, 20);
  std::vector<SequenceResult> results;
  DecodeStats stats;
  run_eqspec(requests, {5, k, DrafterKind::kScriptedWithModel, "random"}, options, &results, &stats);
  const AcceptanceScript script = make_script("random", k);
  int64_t accepted = 0;
  for (const SequenceResult& r : results) {
    ASSERT_FALSE(r.accept_lengths.empty());
    int64_t total = 1;  // the first token comes from the prompt pass
    for (size_t round = 0; round < r.accept_lengths.size(); ++round) {
      const int64_t scripted = std::min(script(r.sequence_index, static_cast<int64_t>(round)), k);
      if (round + 1 < r.accept_lengths.size()) {
        EXPECT_EQ(r.accept_lengths[round], scripted + 1) << "sequence " << r.sequence_index << " round " << round;
      } else {
        EXPECT_LE(r.accept_lengths[round], scripted + 1);  // cut by max_new_tokens
      }
      accepted += scripted;
      total += r.accept_lengths[round];
    }
    EXPECT_EQ(total, 20);
  }
  EXPECT_EQ(stats.generated, 5 * 20);
  EXPECT_EQ(stats.accepted, accepted);
}

TEST(Eqspec, BaselinesEqualTheOracle) {
  const std::vector<SequenceRequest> requests = mixed_requests(7, 4);
  DecodeOptions options = greedy_options(3);
  const auto expected = oracle_outputs(requests, options);
  std::map<int64_t, std::vector<int64_t>> plain;
  for (const SequenceResult& r : nonspec_batch_generate(models().target, requests, options)) plain[r.sequence_index] = r.tokens;
  EXPECT_EQ(plain, expected);
  options.rollback = true;
  EXPECT_EQ(run_eqspec(requests, {7, 3, DrafterKind::kScriptedWithModel, "random"}, options), expected);
  EXPECT_EQ(run_eqspec(requests, {7, 3, DrafterKind::kModel, ""}, options), expected);
}

// Every greedy fault is caught: either an invariant check throws or the output differs
// from the oracle in at least one of a few small scenarios.
TEST(EqspecFaults, EveryGreedyFaultIsCaught) {
  const std::vector<Fault> sampling_only = {Fault::kAlwaysAccept, Fault::kResidualNotNormalised, Fault::kRawDraftDistribution};
  for (Fault fault : all_faults()) {
    if (std::find(sampling_only.begin(), sampling_only.end(), fault) != sampling_only.end()) continue;
    SCOPED_TRACE(std::string(fault_name(fault)));
    bool caught = false;
    std::string how;
    for (const Scenario& s : {Scenario{3, 3, DrafterKind::kScriptedWithModel, "random"},
                              Scenario{4, 2, DrafterKind::kScriptedWithModel, "all-accept"},
                              Scenario{3, 3, DrafterKind::kModel, ""}, Scenario{4, 4, DrafterKind::kNearTarget, ""}}) {
      const std::vector<SequenceRequest> requests = mixed_requests(s.batch, 77);
      DecodeOptions options = greedy_options(s.k, 10);
      const auto expected = oracle_outputs(requests, options);
      options.eos_ids = {expected.begin()->second[4]};
      const auto expected_eos = oracle_outputs(requests, options);
      options.faults.add(fault);
      try {
        if (run_eqspec(requests, s, options) != expected_eos) {
          caught = true;
          how = "output differs from the oracle";
        }
      } catch (const InvariantViolation& e) {
        caught = true;
        how = e.what();
      }
      if (caught) break;
    }
    EXPECT_TRUE(caught);
    std::cout << "[fault " << fault_name(fault) << "] " << how.substr(0, 160) << "\n";
  }
}

}  // namespace
}  // namespace specgate

namespace specgate {
namespace {

// Sampling: the joint distribution of the first two generated tokens, under top-k 3 on a
// float64 tiny model, is enumerable exactly. EQSPEC (K = 1, so the second token is a verified
// draft or a residual draw) must match it; the sampling faults must not. Pearson's chi-square
// over the 9 cells plus one for anything outside the support, at a false-alarm rate of 1e-3
// (critical value 27.88 for 9 degrees of freedom); fixed seeds make the verdict reproducible.
class EqspecSampling : public testing::Test {
 protected:
  static constexpr int64_t kSamples = 4000;
  static constexpr double kCritical = 27.88;

  EqspecSampling()
      : draft_(tiny_config("qwen3"), Models::perturbed(models().target.weights(), tiny_config("qwen3"), 0.3)) {
    prompt_ = {256, 10, 20, 30};
    options_.draft_tokens = 1;
    options_.max_new_tokens = 2;
    options_.sampling = {.temperature = 1.0, .top_k = 3, .seed = 5};
  }

  // Exact P(t1, t2) from the target.
  std::map<std::pair<int64_t, int64_t>, double> exact() const {
    const auto ids = at::TensorOptions().dtype(at::kLong);
    auto next = [&](const std::vector<int64_t>& context) {
      const int64_t n = static_cast<int64_t>(context.size());
      const at::Tensor hidden = models().target.forward(at::tensor(context, ids).unsqueeze(0), at::arange(n, ids).unsqueeze(0),
                                                        at::ones({1, n}, ids.dtype(at::kBool)), nullptr);
      return sampling_distribution(models().target.logits(hidden[0][n - 1]), options_.sampling);
    };
    std::map<std::pair<int64_t, int64_t>, double> cells;
    const at::Tensor first = next(prompt_);
    for (int64_t t1 = 0; t1 < first.size(0); ++t1) {
      const double p1 = first[t1].item<double>();
      if (p1 == 0.0) continue;
      std::vector<int64_t> context = prompt_;
      context.push_back(t1);
      const at::Tensor second = next(context);
      for (int64_t t2 = 0; t2 < second.size(0); ++t2) {
        if (second[t2].item<double>() > 0.0) cells[{t1, t2}] = p1 * second[t2].item<double>();
      }
    }
    return cells;
  }

  double chi_square(const DecodeOptions& options) const {
    std::vector<SequenceRequest> requests;
    for (int64_t i = 0; i < kSamples; ++i) requests.push_back({i, prompt_});
    std::map<std::pair<int64_t, int64_t>, int64_t> counts;
    for (int64_t start = 0; start < kSamples; start += 50) {
      ModelDrafter drafter(draft_);
      const std::span<const SequenceRequest> batch(requests.data() + start, 50);
      for (const SequenceResult& r : eqspec_generate(models().target, drafter, batch, options)) ++counts[{r.tokens[0], r.tokens[1]}];
    }
    const auto cells = exact();
    double statistic = 0.0;
    int64_t inside = 0;
    for (const auto& [cell, probability] : cells) {
      const double expected = probability * kSamples;
      const int64_t seen = counts.contains(cell) ? counts.at(cell) : 0;
      inside += seen;
      statistic += (seen - expected) * (seen - expected) / expected;
    }
    const int64_t outside = kSamples - inside;  // expected 0: any is decisive
    return outside > 0 ? std::numeric_limits<double>::infinity() : statistic;
  }

  Transformer draft_;
  std::vector<int64_t> prompt_;
  DecodeOptions options_;
};

TEST_F(EqspecSampling, MatchesTheExactDistribution) {
  EXPECT_EQ(exact().size(), 9u);
  const double statistic = chi_square(options_);
  std::cout << "[sampling, no fault] chi-square " << statistic << "\n";
  EXPECT_LT(statistic, kCritical);
}

TEST_F(EqspecSampling, SamplingFaultsAreRejected) {
  for (Fault fault : {Fault::kAlwaysAccept, Fault::kResidualNotNormalised, Fault::kRawDraftDistribution,
                      Fault::kBonusFromDraft}) {
    DecodeOptions faulty = options_;
    faulty.faults.add(fault);
    const double statistic = chi_square(faulty);
    std::cout << "[sampling fault " << fault_name(fault) << "] chi-square " << statistic << "\n";
    EXPECT_GT(statistic, kCritical) << fault_name(fault);
  }
}

}  // namespace
}  // namespace specgate
