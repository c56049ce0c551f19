#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/drafter.h"

namespace specgate {

// Decides every row from the target's logits [B, k+1, V] over [pending, d_1 .. d_k] (the
// proposal's tokens on the logits' device), as batched tensor ops on the logits' device, and
// brings the decisions to the host in one copy. Row i is tested on its own drafts only (the
// proposal's lengths[i]); its padding is never kept. Greedy: the longest agreeing prefix, then
// the target's own token at the first disagreement (its prediction after the row's last draft
// when all agree). Sampling: accept d with probability min(1, p(d)/q(d)), i.e. when
// u * q(d) < p(d); on rejection the bonus is drawn from normalised max(0, p - q). p and q are
// both shaped by temperature / top-k / top-p; a drafter whose tokens are not drawn has q a
// point mass, so d is kept with probability p(d) and a rejection draws from p without d. Each
// row draws its uniforms from its own stream, as many as a sequential walk would: one per
// draft tested, then one for the bonus. With options.rollback every row keeps only the
// batch's smallest number of drafts.
std::vector<RowDecision> verify_drafts(const at::Tensor& logits, const DraftProposal& proposal, BatchState& state,
                                      const DecodeOptions& options);

}  // namespace specgate
