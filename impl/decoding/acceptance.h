#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/drafter.h"

namespace specgate {

// Decides every row from the target's logits [B, K+1, V] over [pending, d_1 .. d_K] (the
// proposal's tokens on the logits' device), as
// batched tensor ops on the logits' device, and brings the decisions to the host in one copy.
// Greedy: the longest agreeing prefix, then the target's own token at the first disagreement
// (its (K+1)-th prediction when all K agree). Sampling: accept d with probability
// min(1, p(d)/q(d)), i.e. when u * q(d) < p(d); on rejection the bonus is drawn from
// normalised max(0, p - q). p and q are both shaped by temperature / top-k / top-p. Each row
// draws its uniforms from its own stream, as many as a sequential walk would: one per draft
// tested, then one for the bonus. With options.rollback every row keeps only the batch's
// smallest number of drafts.
std::vector<RowDecision> verify_drafts(const at::Tensor& logits, const DraftProposal& proposal, BatchState& state,
                                      const DecodeOptions& options);

}  // namespace specgate
