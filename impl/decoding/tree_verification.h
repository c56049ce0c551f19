#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/faults.h"
#include "impl/decoding/token_tree.h"
#include "impl/decoding/tree_drafter.h"

namespace specgate {

// Decides every row of a tree round from the target's logits [B, width + 1, V] over each row's
// root and nodes, and the round's trees (each row's shape and tokens, [B, width] on the host).
//
// A greedy row keeps greedy_acceptance(). A sampled row walks down from the root by recursive
// rejection over each node's children (SpecInfer's multi-draft speculative sampling; the
// drafts are ranked, not drawn, so each is a point mass, as in EAGLE's and Medusa's trees):
// with p the target's distribution after the node, its children are tested in order, child t
// kept with probability p(t) / (1 - the mass of the siblings rejected before it), a token
// already rejected never; the walk descends into the first child kept. Where no child is
// kept, the bonus is drawn from p without the rejected tokens; after a leaf, from p. Each row
// draws from its own stream: one uniform per child tested, then one for the bonus.
std::vector<TreeAcceptance> verify_tree(const at::Tensor& logits, const DraftTrees& trees, BatchState& state,
                                       const FaultSet& faults);

}  // namespace specgate
