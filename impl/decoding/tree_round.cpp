#include "impl/decoding/tree_round.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/common/host_transfer.h"
#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/fault_sites.h"
#include "impl/decoding/round.h"
#include "impl/decoding/tree_verification.h"
#include "impl/model/transformer.h"

namespace specgate {
namespace {

// Moves the K/V of row `row`'s kept path to the slots right after the root's (`root_slot`), in
// order: node path[j] sits at root_slot + 1 + path[j] >= root_slot + 1 + j, so no move
// overwrites a node still to move.
void compact_path(KVCache& cache, int64_t row, int64_t root_slot, const std::vector<int64_t>& path, const TreeShape& shape,
                  const FaultSet& faults) {
  for (size_t j = 0; j < path.size(); ++j) {
    const std::optional<int64_t> kept = kept_kv_under_faults(path[j], shape, faults);
    if (!kept) continue;
    const int64_t from = root_slot + 1 + *kept, to = root_slot + 1 + static_cast<int64_t>(j);
    if (from == to) continue;
    for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
      cache.key_at(layer, row, to).copy_(cache.key_at(layer, row, from));
      cache.value_at(layer, row, to).copy_(cache.value_at(layer, row, from));
    }
  }
}

// A tree round's target pass: each row's root (its last token) then its nodes, padded to the
// widest tree; their position ids, the root's plus each offset's depth; and what each sees: the
// row's content, then its own path. A row's offsets past its own tree are padding, at depth 1,
// seeing the root and themselves, seen by none.
struct TreePass {
  at::Tensor tokens, positions, valid;
};

TreePass tree_pass(const BatchState& state, const DraftTrees& trees, const Transformer& target, const FaultSet& faults) {
  const c10::Device device = target.options().device();
  const int64_t batch = state.batch_size(), offsets = trees.tokens.size(1) + 1, root = state.cache_length();
  at::Tensor visible = at::zeros({batch, offsets, offsets}, at::kBool);
  at::Tensor depths = at::ones({batch, offsets}, at::kLong);
  for (int64_t i = 0; i < batch; ++i) {
    const TreeShape& shape = trees.shapes[i];
    const int64_t own = shape.size() + 1;
    visible[i].narrow(0, 0, own).narrow(1, 0, own).copy_(tree_visibility_under_faults(shape.visibility(), shape, faults));
    visible[i].narrow(0, own, offsets - own).select(1, 0).fill_(true);
    depths[i].narrow(0, 0, own).copy_(at::tensor(tree_offsets_under_faults(shape.depth_offsets(), faults), at::kLong));
  }
  const at::Tensor positions = positions_at(state, root, 1, device) + upload(depths, device);
  const at::Tensor seen = at::cat(
      {key_valid(state, root, device).unsqueeze(1).expand({batch, offsets, root}), upload(visible, device)}, 2);
  const at::Tensor key_positions = at::cat({positions_at(state, 0, root, device), positions}, 1);
  return {at::cat({tokens_at(state, root, 1, device), upload(trees.tokens, device)}, 1), positions,
          seen.logical_and(within_window(positions, key_positions, target.config().sliding_window))};
}

}  // namespace

void TreeRound::run(BatchLayout& batch) {
  BatchState& state = batch.state();
  KVCache& cache = batch.target_cache();
  const DraftTrees trees = drafter_.propose(state);
  timer_.charge(stats_.draft_seconds);

  TORCH_CHECK(cache.length() == state.cache_length(), "tree round: target cache out of step with the batch");
  const int64_t root = state.cache_length();
  const TreePass pass = tree_pass(state, trees, target_, options_.faults);
  if (options_.check_invariants) checker_.check_tree_pass(state, trees.shapes, pass.positions, pass.valid);
  const std::vector<TreeAcceptance> decided = verify_tree(
      target_.logits(target_.forward(pass.tokens, pass.positions, pass.valid, &cache)), trees, state, options_.faults);
  timer_.charge(stats_.verify_seconds);

  const int64_t rows = state.batch_size(), width = trees.tokens.size(1);
  std::vector<int64_t> kept_nodes;
  std::vector<TreeRoundRecord> records;
  for (int64_t i = 0; i < rows; ++i) {
    Row& row = state.rows[i];
    const TreeAcceptance& accepted = decided[i];
    const TreeShape& shape = trees.shapes[i];
    compact_path(cache, i, root, accepted.path, shape, options_.faults);
    const auto kept = static_cast<int64_t>(accepted.path.size()), nodes = shape.size();
    batch.keep(static_cast<size_t>(i), kept, width);
    const std::vector<int64_t> tokens(trees.tokens[i].data_ptr<int64_t>(), trees.tokens[i].data_ptr<int64_t>() + nodes);
    std::vector<int64_t> new_tokens;
    for (const int64_t node : accepted.path) new_tokens.push_back(tokens[node]);
    new_tokens.push_back(accepted.bonus);
    const int64_t generated_before = row.generated();
    std::vector<int64_t> gained = append_tokens(row, new_tokens, options_);
    const auto appended = static_cast<int64_t>(gained.size());
    if (options_.check_invariants) {
      records.push_back({.sequence_index = row.sequence_index, .generated_before = generated_before,
                         .max_new_tokens = row.max_new_tokens, .shape = shape, .tokens = tokens, .decision = accepted,
                         .appended = std::move(gained)});
    }
    row.accept_lengths.push_back(appended);
    row.drafted += nodes;
    row.accepted += kept;
    stats_.drafted += nodes;
    stats_.accepted += kept;
    stats_.generated += appended;
    stats_.round_tokens += appended;
    kept_nodes.push_back(kept);
  }
  if (std::adjacent_find(kept_nodes.begin(), kept_nodes.end(), std::not_equal_to<>()) != kept_nodes.end()) {
    for (Row& row : state.rows) ++row.ragged_rounds;
  }
  ++stats_.rounds;
  stats_.row_rounds += rows;
  timer_.charge(stats_.other_seconds);
  if (options_.check_invariants) checker_.check_tree_round(records);
}

}  // namespace specgate
