#include "impl/decoding/token_tree.h"

#include <algorithm>
#include <string>

#include "impl/common/error.h"

namespace specgate {

TreeShape::TreeShape(std::vector<int64_t> parents) : parents_(std::move(parents)), children_(parents_.size() + 1) {
  for (size_t node = 0; node < parents_.size(); ++node) {
    const int64_t parent = parents_[node];
    if (parent < -1 || parent >= static_cast<int64_t>(node))
      throw InputError("tree: node " + std::to_string(node) + "'s parent " + std::to_string(parent) +
                       " is neither -1 (the root) nor an earlier node");
    depths_.push_back(parent < 0 ? 1 : depths_[parent] + 1);
    std::vector<int64_t>& siblings = children_[parent + 1];
    ranks_.push_back(static_cast<int64_t>(siblings.size()));
    siblings.push_back(static_cast<int64_t>(node));
  }
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
  TreeAcceptance acceptance{.path = longest_accepted(shape, -1, tokens, choices)};
  acceptance.bonus = choices[acceptance.path.empty() ? 0 : acceptance.path.back() + 1];
  return acceptance;
}

}  // namespace specgate
