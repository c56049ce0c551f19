#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "impl/decoding/decode_types.h"
#include "impl/decoding/scripted_drafter.h"

namespace specgate::cli {

// How drafts are accepted in a benchmark: by what the draft model proposes, or by a script
// in which each draft token is right with probability `alpha`, independently (the draft model
// still runs, so the timing is real).
struct AcceptanceMode {
  std::optional<double> scripted_alpha;  // none: the draft model's own proposals
  std::string name() const;              // model, or scripted:ALPHA
};
// Parses `model` or `scripted:ALPHA` (0 <= ALPHA <= 1); throws InputError naming --acceptance.
AcceptanceMode acceptance_from_name(const std::string& name);

// A script granting each row, each round, the number of leading successes of K independent
// draws that succeed with probability alpha; a pure function of (seed, sequence, round).
AcceptanceScript bernoulli_script(double alpha, int64_t k, uint64_t seed);

// `count` requests cycling through `prompts`, with sequence indices 0..count-1.
std::vector<SequenceRequest> cycle_prompts(const std::vector<std::vector<int64_t>>& prompts, int64_t count);

}  // namespace specgate::cli
