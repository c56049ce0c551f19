#include "impl/decoding/tree_drafter.h"

#include <algorithm>
#include <vector>

#include "impl/model/transformer.h"

namespace specgate {

at::Tensor ModelTreeDrafter::propose(const BatchState& state, const TreeShape& shape) {
  const int64_t nodes = shape.size();
  at::Tensor drafts = at::zeros({state.batch_size(), nodes}, at::kLong);
  if (nodes == 0) return drafts;
  const at::TensorOptions on_device = at::TensorOptions().dtype(at::kLong).device(draft_.options().device());
  const at::Tensor visible = shape.visibility();
  const std::vector<int64_t> depths = shape.depth_offsets();
  for (int64_t row = 0; row < state.batch_size(); ++row) {
    const std::vector<int64_t>& content = state.rows[row].tokens;
    const auto length = static_cast<int64_t>(content.size()), total = length + nodes;
    // The content sees itself causally; the root (its last token) and the nodes see the content
    // before the root and their own path.
    at::Tensor valid = at::ones({total, total}, at::kBool);
    valid.slice(0, length - 1).slice(1, length - 1).copy_(visible);
    std::vector<int64_t> positions(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i) positions[i] = i;
    for (int64_t node = 0; node < nodes; ++node) positions.push_back(length - 1 + depths[node + 1]);
    std::vector<int64_t> tokens = content;
    tokens.resize(static_cast<size_t>(total), 0);
    const at::Tensor position_ids = at::tensor(positions, at::kLong).unsqueeze(0);
    valid = valid.logical_and(within_window(position_ids, position_ids, draft_.config().sliding_window)[0]);
    const at::Tensor valid_on_device = valid.to(on_device.dtype(at::kBool)).unsqueeze(0);
    const at::Tensor positions_on_device = position_ids.to(on_device);
    auto drafted = drafts.accessor<int64_t, 2>();
    for (int64_t depth = 1; depth <= shape.max_depth(); ++depth) {
      for (int64_t node = 0; node < nodes; ++node) tokens[length + node] = drafted[row][node];
      const at::Tensor logits = draft_.logits(
          draft_.forward(at::tensor(tokens, on_device).unsqueeze(0), positions_on_device, valid_on_device, nullptr))[0];
      for (int64_t node = 0; node < nodes; ++node) {
        if (shape.depth(node) != depth) continue;
        const int64_t parent_slot = length - 1 + (shape.parent(node) + 1);
        const at::Tensor ranked = std::get<1>(logits[parent_slot].topk(shape.rank(node) + 1));
        drafted[row][node] = ranked[shape.rank(node)].item<int64_t>();
      }
    }
  }
  return drafts;
}

at::Tensor ScriptedTreeDrafter::propose(const BatchState& state, const TreeShape& shape) {
  at::Tensor drafts = at::zeros({state.batch_size(), shape.size()}, at::kLong);
  auto drafted = drafts.accessor<int64_t, 2>();
  for (int64_t row = 0; row < state.batch_size(); ++row) {
    const Row& r = state.rows[row];
    const std::vector<int64_t>& continuation = script_.continuations.at(r.sequence_index);
    const auto round = static_cast<int64_t>(r.accept_lengths.size());
    const int64_t right = script_.script(r.sequence_index, round);
    for (int64_t node = 0; node < shape.size(); ++node) {
      const std::vector<int64_t>& siblings = shape.children(shape.parent(node));
      const auto place = std::find(siblings.begin(), siblings.end(), node) - siblings.begin();
      const int64_t depth = shape.depth(node);
      const int64_t truth = continuation.at(static_cast<size_t>(r.generated() + depth - 1));
      const bool on_branch = place == (r.sequence_index + round + depth) % static_cast<int64_t>(siblings.size());
      drafted[row][node] = on_branch && depth <= right ? truth : (truth + 1) % script_.vocab_size;
    }
  }
  return drafts;
}

}  // namespace specgate
