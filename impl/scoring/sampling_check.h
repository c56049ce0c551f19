#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "impl/sampling/sampling.h"
#include "impl/scoring/answer_reader.h"
#include "impl/scoring/input_file.h"
#include "impl/scoring/support_margin.h"
#include "impl/statistics/permutation_ks.h"
#include "impl/statistics/rate_comparison.h"
#include "impl/statistics/uniformity.h"

namespace specgate {

class Rescorer;

// A generated token the shaped target distribution gives no mass: outside the support, or on
// its boundary (within the support margin).
struct UnsupportedToken {
  std::string file;
  int64_t line = 0;
  int64_t question_id = 0;
  int64_t turn = 0;      // 0-based
  int64_t position = 0;  // 0-based, among the turn's generated tokens
  int64_t token = 0;
};

// One side of the check: the answers of one engine setting (speculation on, or off), possibly
// several files of distinct seeds, as randomised PIT values against the target.
struct SampledSide {
  std::vector<InputFile> files;
  int64_t answers = 0;
  int64_t tokens = 0;  // generated tokens scored, those outside the support included
  std::vector<UnsupportedToken> outside_support;  // beyond the margin
  std::vector<UnsupportedToken> boundary;         // outside the support, within the margin: not in the PIT
  // Per token, the chance that a correct engine of the answers' dtype draws one on the boundary
  // there (TokenMasses::boundary_chance); empty without a re-scoring in that dtype.
  std::vector<double> boundary_chances;
  // Tokens whose PIT, or whether they are inside the support, depends on log-probabilities the
  // reference engine did not return (past its top k): not in the test. None from a checkpoint.
  std::vector<UnsupportedToken> beyond_top_k;
  UniformityHistogram histogram{};
  HistogramBand band;           // every bin inside it 95 times in 100 for a correct engine
  DistributionTest uniformity;  // one-sample Kolmogorov-Smirnov of the PIT values, token by token
  ChiSquareTest chi_square;
};

// One hypothesis of the family the verdict rests on: all tokens pooled, or one subtask's.
struct SampledGroup {
  std::string name;  // "all", or the subtask
  // Token by token: the one-sample verdict's test; for two samples a description only.
  DistributionTest test;
  // Two samples: the verdict's test, answers as units, exchanged within their question.
  std::optional<PermutationKsTest> permutation;
  // One sample with a re-scoring in the engine's dtype: how far a correct engine of that dtype
  // moves the PIT law of the group's tokens off uniform (the largest |mean G(u) - u|,
  // pit_law_shift), and the allowance the test grants D for it, kRoundingShiftTolerance times
  // that: the null is then "within the allowance of uniform", not "uniform", which a rounding
  // engine never is and which enough tokens would reject.
  double rounding_shift = 0.0;
  double rounding_allowance = 0.0;
  // The verdict's: the permutation test's; one sample, the Kolmogorov law's at D less the allowance.
  double p_value = 1.0;
  // The smallest sup-distance this group is guaranteed (a Hoeffding bound) to reject with
  // probability >= 0.9 at Holm's strictest step, alpha over the family's size.
  double detectable_distance = 1.0;
  double holm_p_value = 1.0;  // adjusted over the whole family
  bool rejected = false;
  // Whether it was in Holm's family: a permutation test whose smallest attainable p-value lies
  // above its level is left out (holm_after_screening).
  bool tested = true;
};

// Two samples: whether the answers sit on the support's boundary more often per token than the
// baseline (one-sided: only an excess with speculation on points at it), answers as units; a
// member of the Holm family where either side has such a token.
struct SupportRateGroup {
  std::string name;  // "support boundary"
  RateComparison rates;
  double holm_p_value = 1.0;
  bool rejected = false;
};

// Whether the answers (and the baseline) sit on the support's boundary more often than a correct
// engine of their dtype: the boundary tokens counted against the chances the checkpoint re-scored
// in that dtype gives each token, each multiplied by the tolerance for kernels that round
// otherwise than specgate's (an exact one-sided Poisson-binomial test). Most warper bugs (top-p
// ignored, top-k off by one, a cut before the temperature, min-p on another distribution) widen
// the support and keep the proportions inside it: their tokens past the cut are their trace.
struct BoundaryRateTest {
  int64_t observed = 0;  // boundary tokens
  int64_t tokens = 0;
  double expected = 0.0;  // a correct engine's expected count: the sum of the chances
  double tolerance = 1.0;
  double p_value = 1.0;
  double holm_p_value = 1.0;
  bool rejected = false;
};

// How much more often than specgate's own re-scoring in the engine's dtype a correct engine of
// that dtype may sit on the boundary: its kernels round otherwise.
inline constexpr double kBoundaryRateTolerance = 2.0;

// How much farther than specgate's own re-scoring in the engine's dtype a correct engine of that
// dtype may move the PIT law off uniform (and, in acceptance, its expected accepted drafts). The
// shift is what rounding does on average over many tokens, not at any one: two bfloat16 kernels
// of transformers (SDPA and eager attention) move it alike (docs/statistics.md).
inline constexpr double kRoundingShiftTolerance = 2.0;

struct SamplingCheckRequest {
  std::vector<std::filesystem::path> answers;   // the engine's answers (speculation on)
  std::vector<std::filesystem::path> baseline;  // optional: the same engine with speculation off
  const Rescorer* rescorer = nullptr;           // the target: a checkpoint or the reference engine
  // The target checkpoint in the engine's dtype, where that is not the re-scorer's: what a correct
  // engine of that dtype draws on the support's boundary (BoundaryRateTest). nullptr: no such test.
  const Rescorer* in_engine_dtype = nullptr;
  // The warpers the engine applied; nullopt: every answer's run.sampling, which must agree.
  std::optional<SamplingParams> sampling;
  double alpha = 0.05;
  // Seeds the PIT's own uniforms and the permutations, so that a verdict can be replayed. Each
  // answer draws its uniforms from its own stream, keyed by its question and tokens, and the
  // permutations see the answers in that key's order: the answers' order in their files, and the
  // files' on each side, changes no figure.
  uint64_t pit_seed = 0;
  TurnScope turns = TurnScope::kAll;
  SupportMargin margin;  // resolve_support_margin
  // Of the two-sample test: enough that 1 / (permutations + 1) reaches alpha over the family.
  int64_t permutations = 1999;
  AnswerProgress progress;  // over the answers and the baseline's
};

struct SamplingCheckReport {
  std::string generated_at;    // UTC, ISO 8601
  SamplingParams sampling;     // seed unused: the answers' seeds are theirs
  std::string sampling_source;  // "answers" or "flags"
  double alpha = 0.05;
  uint64_t pit_seed = 0;
  SupportMargin margin;
  SampledSide answers;
  std::optional<SampledSide> baseline;
  // "one-sample": the answers' PIT values against Uniform(0, 1), token by token. "two-sample":
  // against the baseline's, answers as units, robust to numerics that both sides share and
  // specgate's model does not.
  std::string test;
  // "all" first, then the subtasks in name order that both sides answer (two samples: some
  // question of the subtask on both sides).
  std::vector<SampledGroup> groups;
  std::vector<SupportRateGroup> support_rates;  // two-sample only
  std::optional<BoundaryRateTest> boundary_rate;  // with a re-scoring in the engine's dtype
  // Hypotheses Holm's procedure ran over: groups, support rates and the boundary rate, but for
  // groups that cannot reach their level.
  int64_t family_size = 0;
  bool rejected = false;
  std::vector<std::string> reasons;  // why it was rejected, one line each
};

// Re-scores every generated token of the answers with the target (teacher forcing on the
// engine's own tokens and prompt_token_ids) and tests the draws. Rejected when a token of either
// side lies outside the support beyond the margin, or when Holm's procedure at alpha rejects a
// hypothesis: one sample, a group's uniformity; two samples, a group's permutation test or the
// support boundary rate against the baseline's; and with a re-scoring in the engine's dtype, the
// boundary rate against a correct engine's. Throws InputError naming the file, line and field for
// an answer without token_ids or prompt_token_ids, a token id outside the vocabulary, sampling
// settings that are missing, greedy or disagree, a random stream drawn twice (the same seed, and
// stream where recorded, on two answers of either side), a baseline that answers none of the
// answers' questions, or too few permutations for the family.
// The PIT seed where none is given: from the SHA-256 of each side's answers (their questions and
// tokens, not the files' bytes, which hold timestamps), whatever their order, so that the same
// answers always get the same verdict and no seed is there to choose.
uint64_t derived_pit_seed(const std::vector<std::filesystem::path>& answers,
                          const std::vector<std::filesystem::path>& baseline);

SamplingCheckReport check_sampling(const SamplingCheckRequest& request);

}  // namespace specgate
