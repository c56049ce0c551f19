#pragma once

#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/decoding/token_tree.h"

namespace specgate {

class Transformer;

// One round's draft trees: each row's shape, and its nodes' tokens, int64 [B, width] on the
// host, where width is the largest tree's size; a row's columns past its own nodes are unused.
struct DraftTrees {
  std::vector<TreeShape> shapes;
  at::Tensor tokens;
};

// Proposes each row's draft tree for a round.
class TreeDrafter {
 public:
  virtual ~TreeDrafter() = default;
  virtual DraftTrees propose(const BatchState& state) = 0;
  // The most nodes a row's tree has.
  virtual int64_t max_nodes() const = 0;
};

// EAGLE-2's dynamic tree, as SGLang's `--speculative-eagle-topk`, `--speculative-num-steps` and
// `--speculative-num-draft-tokens` state it: the root's `topk` likeliest tokens, then `depth` - 1
// times the `topk` likeliest of the newest level's children (each level's topk x topk
// candidates ranked by the draft's probability of their whole path); of all of them, the `nodes`
// likeliest paths are the tree.
struct TopkTree {
  int64_t topk = 0, depth = 0, nodes = 0;
};

// A tree of one shape for every row and round, or a dynamic one.
using TreePolicy = std::variant<TreeShape, TopkTree>;

// The most nodes a row's tree has under `policy`: the slots a round adds, as K drafts do.
int64_t max_tree_nodes(const TreePolicy& policy);

// Drafts with a model, one pass per depth over each row's tree so far, each node seeing the row's
// content and its ancestors; the content's K/V are cached per sequence from round to round (a
// round feeds only what the row gained). For a static shape node i's token is the draft's
// rank(i)-th choice after node i's parent (the root: the row's last token).
std::unique_ptr<TreeDrafter> make_model_tree_drafter(const Transformer& draft, const TreePolicy& policy);

// Drafts a tree that follows an acceptance script: on one branch, a different sibling for each
// row, round and depth, a row proposes its true continuation as deep as the script says it is
// right that round, and a wrong token below; every other node is wrong. Row of sequence j
// drafts shapes[j % shapes.size()]. Patterns of acceptance through any branch of trees that
// differ across rows are chosen rather than hoped for.
class ScriptedTreeDrafter final : public TreeDrafter {
 public:
  ScriptedTreeDrafter(ScriptedDrafts script, std::vector<TreeShape> shapes);
  DraftTrees propose(const BatchState& state) override;
  int64_t max_nodes() const override { return max_nodes_; }

 private:
  ScriptedDrafts script_;
  std::vector<TreeShape> shapes_;
  int64_t max_nodes_ = 0;
};

}  // namespace specgate
