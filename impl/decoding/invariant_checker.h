#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/token_tree.h"

namespace specgate {

class KVCache;
class Transformer;

// The first violated invariant, with row, layer, slot and values, and the sequence whose row
// breaks it where one row does.
class InvariantViolation : public std::runtime_error {
 public:
  explicit InvariantViolation(const std::string& message, std::optional<int64_t> sequence_index = std::nullopt)
      : std::runtime_error(message), sequence_index(sequence_index) {}
  std::optional<int64_t> sequence_index;
};

// What one round did to one row, for the accounting check (I4): what verification decided, and
// the tokens the row gained (the decision's new tokens, cut at EOS or max_new_tokens).
struct RoundRecord {
  int64_t sequence_index = 0;
  int64_t generated_before = 0;
  int64_t max_new_tokens = 0;
  bool greedy = true;  // the row chose its tokens greedily
  RowDecision decision;
  std::vector<int64_t> appended;
};

// What one tree round did to one row, for the accounting check (I4 for trees).
struct TreeRoundRecord {
  int64_t sequence_index = 0;
  int64_t generated_before = 0;
  int64_t max_new_tokens = 0;
  TreeShape shape;
  std::vector<int64_t> tokens;  // the nodes'
  TreeAcceptance decision;      // a greedy row's carries the target's choices
  std::vector<int64_t> appended;
};

// Checks DESIGN.md's invariants on a batch after realignment:
//  I1 rectangular alignment: every padding >= 0 and some row has none;
//  I2 contiguous positions: the padding position ids are computed with is the real one;
//  I3 KV consistency: for both caches, every visible slot of a row holds the K/V that a
//     standalone pass over the row's unpadded content computes (slow: one pass per row);
//  I4 accounting (with the round's records): greedy rows keep the agreeing prefix plus the
//     target's token, every round appends accepted + 1 tokens unless EOS or max_new_tokens
//     ends the row exactly there.
class InvariantChecker {
 public:
  InvariantChecker(const Transformer& target, const DecodeOptions& options) : target_(target), options_(options) {}

  // `draft_cache` is null for a drafter without a model.
  void check_layout(const BatchState& state, const KVCache& target_cache, const Transformer* draft_model,
                    const KVCache* draft_cache) const;
  void check_round(const std::vector<RoundRecord>& records) const;
  // A tree pass's inputs, before it runs: each node of row i (`shapes`[i]) at the root's position
  // plus its depth (`positions` [B, width + 1]), and seeing (`valid` [B, width + 1, keys]) the
  // row's content within the window, the root and its own ancestors, nothing else; no node
  // sees another row's padding node.
  void check_tree_pass(const BatchState& state, const std::vector<TreeShape>& shapes, const at::Tensor& positions,
                       const at::Tensor& valid) const;
  // I4 for trees: each row kept a path down from the root; a greedy row the longest whose every
  // token is the target's choice after its parent, then the target's token after it; and it
  // gained those tokens, ending at EOS or max_new_tokens exactly there.
  void check_tree_round(const std::vector<TreeRoundRecord>& records) const;

 private:
  void check_cache(const char* which, const Transformer& model, const KVCache& cache, const BatchState& state,
                   bool draft) const;

  const Transformer& target_;
  const DecodeOptions& options_;
};

}  // namespace specgate
