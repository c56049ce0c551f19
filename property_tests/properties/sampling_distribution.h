#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "impl/decoding/faults.h"
#include "impl/model/transformer.h"
#include "impl/sampling/sampling.h"
#include "property_tests/properties/decode_case.h"
#include "property_tests/properties/goodness_of_fit.h"

namespace specgate::props {

// The size of the distribution test: a correct decoder is rejected with this probability
// (per scenario), whatever the seed.
inline constexpr double kDistributionAlpha = 1e-4;

// A sampling scenario small enough to enumerate: a tiny vocabulary, a few new tokens, a few
// prompts decoded together in batches of more than one row.
struct DistributionScenario {
  std::string name;
  ModelSpec target;
  DraftKind draft = DraftKind::kIndependent;  // kIndependent, kNearTarget or kNgram
  uint64_t draft_seed = 0;
  double draft_noise = 0.0;
  std::vector<std::vector<int64_t>> prompts;
  int64_t k = 1;
  int64_t max_new_tokens = 2;
  SamplingParams sampling;  // its seed is the run's: sequence j draws from stream (seed, j)
  std::vector<int64_t> eos_ids;
  DecoderKind decoder = DecoderKind::kEqspec;
  int64_t batch_size = 8;  // rows per EQSPEC call, or EXSPEC's B
  int64_t window = 8;      // EXSPEC's W
  std::vector<int64_t> tree;  // parents (TreeShape): trees of this shape drafted by the draft model and verified
  int64_t samples_per_prompt = 2000;
};

// The exact distribution over complete outputs (max_new_tokens tokens, or fewer ending at
// EOS) that the target defines for `prompt` under `sampling`: every prefix scored by a
// standalone forward pass.
std::map<Outcome, double> exact_output_distribution(const Transformer& target, const std::vector<int64_t>& prompt,
                                                    int64_t max_new_tokens, const SamplingParams& sampling,
                                                    const std::vector<int64_t>& eos_ids);

struct DistributionTestResult {
  GoodnessOfFit fit;  // over all prompts
  bool rejected = false;
};

// Samples every prompt samples_per_prompt times through the scenario's decoder (requests of
// all prompts interleaved, so batches mix lengths) and tests the outputs against the exact
// distribution at level `alpha`.
DistributionTestResult distribution_test(const DistributionScenario& scenario, const FaultSet& faults,
                                      double alpha = kDistributionAlpha);

// The faults of the sampling acceptance rule, which the distribution test is there to catch.
std::vector<Fault> sampling_faults();

// The scenarios CI runs, fixed seeds included: EQSPEC, EXSPEC and token trees under top-k,
// top-p with EOS, and temperature alone.
std::vector<DistributionScenario> distribution_panel();

// Simpler versions of a scenario, tried in order when shrinking a failure: two rows, K = 1,
// one prompt, two new tokens.
std::vector<DistributionScenario> simplifications(const DistributionScenario& scenario);

nlohmann::json summary(const DistributionScenario& scenario);

}  // namespace specgate::props
