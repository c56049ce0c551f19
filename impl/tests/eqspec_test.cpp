#include <map>
#include <random>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "impl/common/error.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/model_drafter.h"
#include "impl/statistics/randomized_pit.h"
#include "impl/statistics/uniformity.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using namespace specgate::test_support;

// Runs EQSPEC with the invariant checker on and returns outputs by sequence.
std::map<int64_t, std::vector<int64_t>> run_eqspec(const std::vector<SequenceRequest>& requests, const Scenario& s,
                                                   const DecodeOptions& options, std::vector<SequenceResult>* results = nullptr,
                                                   DecodeStats* stats = nullptr) {
  DecodeOptions scripted = options;
  scripted.draft_tokens = s.k;
  const ScriptedDrafts script = oracle_script(requests, scripted, s.script);
  const std::unique_ptr<Drafter> drafter = make_drafter(s.drafter, script);
  const std::vector<SequenceResult> out = eqspec_generate(models().target, *drafter, requests, options, stats);
  if (results != nullptr) *results = out;
  return by_sequence(out);
}


TEST(Eqspec, GreedyEqualsTheOracleForEveryBatchSizeKAndDrafter) {
  int64_t scenario = 0;
  for (int64_t batch : {1, 2, 3, 5, 8, 16}) {
    for (int64_t k : {1, 2, 3, 5, 8}) {
      const std::vector<SequenceRequest> requests = mixed_requests(batch, batch * 10 + k);
      const DecodeOptions options = greedy_options(k);
      const auto expected = oracle_outputs(requests, options);
      std::vector<DrafterKind> kinds = {DrafterKind::kModel, DrafterKind::kNearTarget, DrafterKind::kScripted,
                                        DrafterKind::kScriptedWithModel};
      // Ragged drafters at two values of K: a round's drafts vary from 0 to K per row.
      if (k == 2 || k == 5) kinds.insert(kinds.end(), {DrafterKind::kScriptedRagged, DrafterKind::kNgram});
      for (DrafterKind kind : kinds) {
        const std::string script = std::vector<std::string>{"all-accept", "all-reject", "one-row-rejects", "random"}[scenario++ % 4];
        SCOPED_TRACE("batch " + std::to_string(batch) + " K " + std::to_string(k) + " drafter " +
                     std::to_string(static_cast<int>(kind)) + " script " + script);
        EXPECT_EQ(run_eqspec(requests, {batch, k, kind, script}, options), expected);
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
  expect_scripted_acceptance(results, stats, options);
}

// Three rows of one prompt length; the first keeps all K drafts in its round 2 alone.
TEST(Eqspec, CoverageCountsRaggedRoundsRealignmentsAndRowsThatLeaveEarly) {
  std::vector<SequenceRequest> requests = mixed_requests(3, 4);
  for (SequenceRequest& request : requests) request.prompt.resize(5, 7);
  const int64_t k = 3;
  const DecodeOptions options = greedy_options(k, 12);
  DecodeOptions longer = options;
  longer.max_new_tokens += k + 1;
  const auto run = [&](AcceptanceScript script) {
    const ScriptedDrafts drafts{oracle_outputs(requests, longer), std::move(script), 259};
    ModelDrafter drafter(models().draft, &drafts);
    std::map<int64_t, SequenceResult> out;
    for (SequenceResult& result : eqspec_generate(models().target, drafter, requests, options))
      out[result.sequence_index] = std::move(result);
    return out;
  };
  for (const auto& [sequence, result] : run([](int64_t, int64_t) { return int64_t{0}; })) {
    SCOPED_TRACE(sequence);
    EXPECT_EQ(result.ragged_rounds, 0);
    EXPECT_EQ(result.realignments, 0);
    EXPECT_FALSE(result.finished_early);
  }
  const auto ragged = run([k](int64_t sequence, int64_t round) { return sequence == 100 && round == 2 ? k : 0; });
  for (const auto& [sequence, result] : ragged) {
    SCOPED_TRACE(sequence);
    EXPECT_EQ(result.ragged_rounds, 1);
    // The others fall behind (padded) and move again when the first, the longest, leaves.
    EXPECT_EQ(result.realignments, sequence == 100 ? 0 : 2);
    EXPECT_EQ(result.finished_early, sequence == 100);
  }
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

TEST(Eqspec, NaiveRealignmentGivesTheSameOutputsAndLayouts) {
  for (int64_t batch : {1, 4, 9}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const std::vector<SequenceRequest> requests = mixed_requests(batch, 31 + batch);
    DecodeOptions options = greedy_options(3);
    options.naive_realign = true;  // with the invariant checker on: I1-I3 hold after every round
    const auto expected = oracle_outputs(requests, options);
    EXPECT_EQ(run_eqspec(requests, {batch, 3, DrafterKind::kScriptedWithModel, "random"}, options), expected);
    EXPECT_EQ(run_eqspec(requests, {batch, 3, DrafterKind::kModel, ""}, options), expected);
  }
}

// A place a finished row frees takes a new request while the others decode: its prompt pass is
// the next step, and it shares every round after with them (I1-I4 checked on each).
TEST(EqspecDecoder, ARequestJoinsTheRowsDecodingAsSoonAsOneFinishes) {
  std::vector<SequenceRequest> requests = mixed_requests(3, 12);
  requests[0].max_new_tokens = 2;
  const DecodeOptions options = greedy_options(3, 14);
  auto expected = oracle_outputs(requests, options);
  expected[requests[0].sequence_index].resize(2);
  ModelDrafter drafter(models().draft);
  EqspecDecoder decoder(models().target, drafter, options, 2);
  decoder.admit(requests[0]);
  decoder.admit(requests[1]);
  EXPECT_EQ(decoder.free_places(), 0);
  std::map<int64_t, std::vector<int64_t>> outputs;
  const auto step = [&] {
    for (const SequenceResult& result : decoder.step()) outputs[result.sequence_index] = result.tokens;
  };
  while (!outputs.contains(requests[0].sequence_index)) step();
  ASSERT_FALSE(outputs.contains(requests[1].sequence_index));
  EXPECT_EQ(decoder.free_places(), 1) << "the finished row's place";
  decoder.admit(requests[2]);
  step();
  std::vector<int64_t> live;
  decoder.visit_live([&](int64_t sequence, std::span<const int64_t>) { live.push_back(sequence); });
  EXPECT_EQ(live, (std::vector<int64_t>{requests[1].sequence_index, requests[2].sequence_index}));
  while (decoder.has_work()) step();
  EXPECT_EQ(outputs, expected);
}

// Every greedy fault is caught: either an invariant check throws or the output differs
// from the oracle in at least one of a few small scenarios. A cancellation fault shows only
// when a sequence is cancelled: the cancellation property's; the tree faults are the Trees tests'.
TEST(EqspecFaults, EveryGreedyFaultIsCaught) {
  for (Fault fault : all_faults()) {
    if (is_exspec_only(fault) || is_sampling_only(fault) || is_tree_only(fault) || fault == Fault::kCancelShiftsRows) continue;
    SCOPED_TRACE(std::string(fault_name(fault)));
    bool caught = false;
    std::string how;
    for (const Scenario& s : {Scenario{3, 3, DrafterKind::kScriptedWithModel, "random"},
                              Scenario{4, 2, DrafterKind::kScriptedWithModel, "all-accept"},
                              Scenario{3, 3, DrafterKind::kModel, ""}, Scenario{4, 4, DrafterKind::kNearTarget, ""},
                              Scenario{4, 3, DrafterKind::kScriptedRagged, "all-accept"},
                              Scenario{4, 3, DrafterKind::kNgram, ""}}) {
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
// draft or a residual draw) must match it; the sampling faults must not. Two tests judge the
// same draws: Pearson's chi-square over the 9 cells plus one for anything outside the support
// (critical value 27.88 for 9 degrees of freedom), and the Kolmogorov-Smirnov test of every
// token's randomised PIT that `conformance sampling` runs, which needs no enumeration. Both at
// a false-alarm rate of 1e-3, with fixed seeds, so that the verdicts are reproducible; they
// must agree on every fault.
class EqspecSampling : public testing::Test {
 protected:
  using Counts = std::map<std::pair<int64_t, int64_t>, int64_t>;
  static constexpr int64_t kSamples = 4000;
  static constexpr double kCritical = 27.88;
  static constexpr double kAlpha = 1e-3;

  EqspecSampling()
      : draft_(tiny_config("qwen3"), Models::perturbed(models().target.weights(), tiny_config("qwen3"), 0.3)) {
    prompt_ = {256, 10, 20, 30};
    options_.draft_tokens = 1;
    options_.max_new_tokens = 2;
    options_.sampling = {.temperature = 1.0, .top_k = 3, .seed = 5};
  }

  // The target's shaped next-token distribution after `context`.
  std::vector<double> next(const std::vector<int64_t>& context) const {
    const auto ids = at::TensorOptions().dtype(at::kLong);
    const int64_t n = static_cast<int64_t>(context.size());
    const at::Tensor hidden = models().target.forward(at::tensor(context, ids).unsqueeze(0), at::arange(n, ids).unsqueeze(0),
                                                      at::ones({1, n}, ids.dtype(at::kBool)), nullptr);
    const at::Tensor p = sampling_distribution(models().target.logits(hidden[0][n - 1]), options_.sampling).contiguous();
    return {p.data_ptr<double>(), p.data_ptr<double>() + p.numel()};
  }

  // Exact P(t1, t2) from the target.
  std::map<std::pair<int64_t, int64_t>, double> exact() const {
    std::map<std::pair<int64_t, int64_t>, double> cells;
    const std::vector<double> first = next(prompt_);
    for (int64_t t1 = 0; t1 < static_cast<int64_t>(first.size()); ++t1) {
      if (first[t1] == 0.0) continue;
      std::vector<int64_t> context = prompt_;
      context.push_back(t1);
      const std::vector<double> second = next(context);
      for (int64_t t2 = 0; t2 < static_cast<int64_t>(second.size()); ++t2) {
        if (second[t2] > 0.0) cells[{t1, t2}] = first[t1] * second[t2];
      }
    }
    return cells;
  }

  Counts draw(const DecodeOptions& options) const {
    std::vector<SequenceRequest> requests;
    for (int64_t i = 0; i < kSamples; ++i) requests.push_back({i, prompt_});
    Counts counts;
    for (int64_t start = 0; start < kSamples; start += 50) {
      ModelDrafter drafter(draft_);
      const std::span<const SequenceRequest> batch(requests.data() + start, 50);
      for (const SequenceResult& r : eqspec_generate(models().target, drafter, batch, options)) ++counts[{r.tokens[0], r.tokens[1]}];
    }
    return counts;
  }

  double chi_square(const Counts& counts) const {
    double statistic = 0.0;
    int64_t inside = 0;
    for (const auto& [cell, probability] : exact()) {
      const double expected = probability * kSamples;
      const int64_t seen = counts.contains(cell) ? counts.at(cell) : 0;
      inside += seen;
      statistic += (seen - expected) * (seen - expected) / expected;
    }
    const int64_t outside = kSamples - inside;  // expected 0: any is decisive
    return outside > 0 ? std::numeric_limits<double>::infinity() : statistic;
  }

  // The PIT test's p-value over both tokens of every draw; 0 when a token lies outside the support.
  double pit_p_value(const Counts& counts) const {
    SequenceRng uniforms(99, 0);
    std::vector<double> values;
    const std::vector<double> first = next(prompt_);
    for (const auto& [cell, seen] : counts) {
      std::vector<int64_t> context = prompt_;
      context.push_back(cell.first);
      const std::vector<double> second = next(context);
      for (int64_t i = 0; i < seen; ++i) {
        const std::optional<double> u1 = randomized_pit_most_likely_first(first, cell.first, uniforms.uniform());
        const std::optional<double> u2 = randomized_pit_most_likely_first(second, cell.second, uniforms.uniform());
        if (!u1 || !u2) return 0.0;
        values.push_back(*u1);
        values.push_back(*u2);
      }
    }
    return ks_uniformity_test(values, kAlpha).p_value;
  }

  Transformer draft_;
  std::vector<int64_t> prompt_;
  DecodeOptions options_;
};

TEST_F(EqspecSampling, MatchesTheExactDistribution) {
  EXPECT_EQ(exact().size(), 9u);
  const Counts counts = draw(options_);
  const double statistic = chi_square(counts), p_value = pit_p_value(counts);
  std::cout << "[sampling, no fault] chi-square " << statistic << ", PIT p " << p_value << "\n";
  EXPECT_LT(statistic, kCritical);
  EXPECT_GT(p_value, kAlpha);
}

// Every sampling fault of chains but three: a stale draft distribution needs a second drafting
// round, which a two-token answer never has (its first token comes from the prefill), a shared
// random stream is the next test's, and warpers cut before the temperature cut what they should
// at this temperature, 1 (the property suite's top-p scenarios temper).
TEST_F(EqspecSampling, SamplingFaultsAreRejectedByBothTests) {
  std::vector<Fault> faults = {Fault::kBonusFromDraft};  // a greedy fault that also skews sampling
  for (Fault fault : all_faults()) {
    if (is_sampling_only(fault) && !is_tree_only(fault) && fault != Fault::kSharedRandomStream &&
        fault != Fault::kStaleDraftDistribution && fault != Fault::kWarpersBeforeTemperature)
      faults.push_back(fault);
  }
  for (Fault fault : faults) {
    DecodeOptions faulty = options_;
    faulty.faults.add(fault);
    const Counts counts = draw(faulty);
    const double statistic = chi_square(counts), p_value = pit_p_value(counts);
    std::cout << "[sampling fault " << fault_name(fault) << "] chi-square " << statistic << ", PIT p " << p_value << "\n";
    EXPECT_GT(statistic, kCritical) << fault_name(fault);
    EXPECT_LE(p_value, kAlpha) << fault_name(fault);
  }
}

// Rows sharing one random stream each keep their own distribution: what changes is that the 50
// rows of a batch, all on one prompt, draw together, so the counts clump. The chi-square sees
// the clumps; the PIT test, which looks at each token's marginal, is not built to, and the
// determinism property catches the fault directly (a row's tokens change with its batch).
TEST_F(EqspecSampling, ASharedRandomStreamIsCaughtByTheChiSquare) {
  DecodeOptions faulty = options_;
  faulty.faults.add(Fault::kSharedRandomStream);
  const Counts counts = draw(faulty);
  const double statistic = chi_square(counts);
  std::cout << "[sampling fault shared-random-stream] chi-square " << statistic << ", PIT p " << pit_p_value(counts) << "\n";
  EXPECT_GT(statistic, kCritical);
}

// A fault that the engine or the decoding mode cannot commit is refused, not silently off.
TEST(EqspecFaults, FaultsTheRunCannotCommitAreInputErrors) {
  FaultSet exspec_fault, sampling_fault, greedy_fault;
  exspec_fault.add(Fault::kWrongSequenceKv);
  sampling_fault.add(Fault::kAlwaysAccept);
  greedy_fault.add(Fault::kBonusFromDraft);
  EXPECT_THROW(require_committable(exspec_fault, "eqspec", /*exspec_engine=*/false, /*greedy=*/false), InputError);
  EXPECT_NO_THROW(require_committable(exspec_fault, "exspec", true, true));
  EXPECT_THROW(require_committable(sampling_fault, "exspec", true, /*greedy=*/true), InputError);
  EXPECT_NO_THROW(require_committable(sampling_fault, "eqspec", false, false));
  EXPECT_NO_THROW(require_committable(greedy_fault, "eqspec", false, true));
}

}  // namespace
}  // namespace specgate
