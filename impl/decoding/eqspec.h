#pragma once

#include <span>
#include <vector>

#include "impl/decoding/decode_types.h"
#include "impl/decoding/drafter.h"
#include "impl/model/transformer.h"

namespace specgate {

// EQSPEC (DESIGN.md section 3): round-synchronous batch speculative decoding. Each round the
// drafter proposes K tokens for every live row, one target pass verifies them all, each row
// keeps its agreeing prefix plus a bonus token, and the batch is re-laid out: rows unpadded,
// extended, re-padded to the new minimal width, both caches moved with one batched gather per
// layer, rejected entries dropped. Finished rows leave the batch at once. With
// options.check_invariants, I1-I4 are checked after every round (InvariantViolation).
// options.rollback gives the `rollback` baseline. Results come back in the order of `requests`.
std::vector<SequenceResult> eqspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            DecodeStats* stats = nullptr);

// The `nonspec-batch` baseline through the same loop: plain batched decoding with left
// padding (one token per row per step, K = 0), finished rows leaving at once.
std::vector<SequenceResult> nonspec_batch_generate(const Transformer& target, std::span<const SequenceRequest> requests,
                                                   const DecodeOptions& options, DecodeStats* stats = nullptr);

}  // namespace specgate
