#include "impl/decoding/token_tree.h"

#include <algorithm>
#include <string>

#include "impl/common/error.h"

namespace specgate {

TreeShape::TreeShape(std::vector<int64_t> parents, std::vector<int64_t> ranks)
    : parents_(std::move(parents)), ranks_(std::move(ranks)), children_(parents_.size() + 1) {
  if (!ranks_.empty() && ranks_.size() != parents_.size())
    throw InputError("tree: " + std::to_string(ranks_.size()) + " ranks for " + std::to_string(parents_.size()) + " nodes");
  const bool ranked = !ranks_.empty();
  for (size_t node = 0; node < parents_.size(); ++node) {
    const int64_t parent = parents_[node];
    if (parent < -1 || parent >= static_cast<int64_t>(node))
      throw InputError("tree: node " + std::to_string(node) + "'s parent " + std::to_string(parent) +
                       " is neither -1 (the root) nor an earlier node");
    depths_.push_back(parent < 0 ? 1 : depths_[parent] + 1);
    std::vector<int64_t>& siblings = children_[parent + 1];
    if (!ranked) ranks_.push_back(static_cast<int64_t>(siblings.size()));
    const int64_t rank = ranks_[node];
    if (rank < 0 || std::any_of(siblings.begin(), siblings.end(), [&](int64_t sibling) { return ranks_[sibling] == rank; }))
      throw InputError("tree: node " + std::to_string(node) + "'s rank " + std::to_string(rank) +
                       " is negative or a sibling's");
    siblings.push_back(static_cast<int64_t>(node));
  }
}

TreeShape TreeShape::from_choices(const std::vector<std::vector<int64_t>>& choices) {
  std::vector<int64_t> parents, ranks;
  for (size_t node = 0; node < choices.size(); ++node) {
    const std::vector<int64_t>& path = choices[node];
    const std::string name = "tree: choice " + std::to_string(node);
    if (path.empty()) throw InputError(name + " is empty: the root is not a choice");
    int64_t parent = -1;
    if (path.size() > 1) {
      const std::vector<int64_t> prefix(path.begin(), path.end() - 1);
      const auto earlier = std::find(choices.begin(), choices.begin() + static_cast<std::ptrdiff_t>(node), prefix);
      if (earlier == choices.begin() + static_cast<std::ptrdiff_t>(node))
        throw InputError(name + ": its parent's path is not an earlier choice");
      parent = earlier - choices.begin();
    }
    parents.push_back(parent);
    ranks.push_back(path.back());
  }
  return TreeShape(std::move(parents), std::move(ranks));
}

int64_t TreeShape::max_depth() const { return depths_.empty() ? 0 : *std::max_element(depths_.begin(), depths_.end()); }

std::vector<int64_t> TreeShape::path_to(int64_t node) const {
  std::vector<int64_t> path;
  for (; node >= 0; node = parents_[node]) path.push_back(node);
  std::reverse(path.begin(), path.end());
  return path;
}

at::Tensor TreeShape::visibility() const {
  const int64_t offsets = size() + 1;
  at::Tensor visible = at::zeros({offsets, offsets}, at::kBool);
  auto sees = visible.accessor<bool, 2>();
  for (int64_t q = 0; q < offsets; ++q) {
    sees[q][0] = true;
    for (int64_t node = q - 1; node >= 0; node = parents_[node]) sees[q][node + 1] = true;
  }
  return visible;
}

std::vector<int64_t> TreeShape::depth_offsets() const {
  std::vector<int64_t> offsets{0};
  offsets.insert(offsets.end(), depths_.begin(), depths_.end());
  return offsets;
}

at::Tensor within_window(const at::Tensor& query_positions, const at::Tensor& key_positions, std::optional<int64_t> window) {
  const at::Tensor distance = query_positions.unsqueeze(2) - key_positions.unsqueeze(1);
  return window ? distance.lt(*window) : at::ones_like(distance, at::kBool);
}

namespace {

// The longest path below `at` (-1: the root) whose every token is the target's choice after its
// parent; of equally long ones, the first in sibling order.
std::vector<int64_t> longest_accepted(const TreeShape& shape, int64_t at, std::span<const int64_t> tokens,
                                      std::span<const int64_t> choices) {
  std::vector<int64_t> best;
  for (const int64_t child : shape.children(at)) {
    if (tokens[child] != choices[at + 1]) continue;
    std::vector<int64_t> below = longest_accepted(shape, child, tokens, choices);
    if (below.size() + 1 > best.size()) {
      below.insert(below.begin(), child);
      best = std::move(below);
    }
  }
  return best;
}

}  // namespace

TreeAcceptance greedy_acceptance(const TreeShape& shape, std::span<const int64_t> tokens, std::span<const int64_t> choices) {
  TreeAcceptance acceptance{.path = longest_accepted(shape, -1, tokens, choices),
                            .target_choices = std::vector<int64_t>(choices.begin(), choices.end())};
  acceptance.bonus = choices[acceptance.path.empty() ? 0 : acceptance.path.back() + 1];
  return acceptance;
}

}  // namespace specgate
