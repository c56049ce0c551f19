#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <ATen/ATen.h>

namespace specgate {

// The shape of a draft tree: node i's parent, a node before it, or -1 for a child of the root.
// The root is the row's last token, whose K/V the target has not seen yet: a tree round
// verifies it and the nodes in one pass, the root at offset 0 and node i at offset i + 1. A
// node's rank names the draft's choice it takes after its parent (0: the most likely); by
// default its place among its siblings.
class TreeShape {
 public:
  // Throws InputError naming the node whose parent is neither -1 nor an earlier node, or whose
  // rank is negative or a sibling's.
  explicit TreeShape(std::vector<int64_t> parents, std::vector<int64_t> ranks = {});
  // EAGLE's and Medusa's tree choices: each node as the ranks on its path from the root, every
  // path after its parent's. Throws InputError naming the choice that breaks this.
  static TreeShape from_choices(const std::vector<std::vector<int64_t>>& choices);

  int64_t size() const { return static_cast<int64_t>(parents_.size()); }
  int64_t parent(int64_t node) const { return parents_[node]; }
  int64_t depth(int64_t node) const { return depths_[node]; }  // 1 for a child of the root
  int64_t rank(int64_t node) const { return ranks_[node]; }
  int64_t max_depth() const;
  // The children of `node` (-1: the root's), in order.
  const std::vector<int64_t>& children(int64_t node) const { return children_[node + 1]; }
  // `node`'s ancestors from the root's child down to `node` itself.
  std::vector<int64_t> path_to(int64_t node) const;

  // [size + 1, size + 1]: offset q may see offset k when k is q or one of its ancestors (the
  // root is everyone's).
  at::Tensor visibility() const;
  // Each offset's depth, the root's 0: added to the row's position of the root.
  std::vector<int64_t> depth_offsets() const;

 private:
  std::vector<int64_t> parents_, depths_, ranks_;
  std::vector<std::vector<int64_t>> children_;  // [0]: the root's
};

// bool [B, T, S]: key s lies within `window` positions before query t, by `query_positions`
// [B, T] and `key_positions` [B, S]; everywhere without a window.
at::Tensor within_window(const at::Tensor& query_positions, const at::Tensor& key_positions, std::optional<int64_t> window);

// What a greedy target accepts of a tree: the nodes of the longest path from the root whose every
// token is the target's choice after its parent, then the target's own token after the last.
struct TreeAcceptance {
  std::vector<int64_t> path;  // node indices, root's child first
  int64_t bonus = 0;
  std::vector<int64_t> target_choices;  // greedy: the target's token after each offset (0: the root)
};

// `tokens`[i] is node i's token; `choices`[q] the target's greedy token after offset q (0: the
// root). Of two siblings with the target's token, the one below which more is accepted is
// taken, the first of equals.
TreeAcceptance greedy_acceptance(const TreeShape& shape, std::span<const int64_t> tokens,
                                 std::span<const int64_t> choices);

}  // namespace specgate
