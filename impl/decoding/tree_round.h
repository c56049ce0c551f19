#pragma once

#include "impl/decoding/batch_layout.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/tree_drafter.h"

namespace specgate {

class Transformer;

// One round of token trees on a left-padded batch whose target cache is laid out like it, as
// EQSPEC's and EXSPEC's batches are: the drafter proposes each row's tree, of a shape of its
// own; one target pass verifies each row's last token (the root) and its nodes, each seeing the
// row's content and its own path, at the root's position plus its depth; each row keeps the
// path verify_tree() accepts and the target's token after it (ending at EOS or max_new_tokens,
// exactly there); the path's K/V is moved right after the root's and the other nodes' slots
// are dropped. With options.check_invariants, the pass's mask and position ids are checked
// before it runs (InvariantChecker::check_tree_pass) and each row's accounting after it
// (check_tree_round).
class TreeRound {
 public:
  TreeRound(const Transformer& target, TreeDrafter& drafter, const DecodeOptions& options, DecodeStats& stats,
            PhaseTimer& timer)
      : target_(target), drafter_(drafter), options_(options), stats_(stats), timer_(timer), checker_(target, options) {}

  void run(BatchLayout& batch);

 private:
  const Transformer& target_;
  TreeDrafter& drafter_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  PhaseTimer& timer_;
  InvariantChecker checker_;
};

}  // namespace specgate
