#pragma once

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/decoding/token_tree.h"

namespace specgate {

class Transformer;

// Proposes each row's draft tree of a static shape: node i's token is the draft's rank(i)-th
// choice after node i's parent (the root: the row's last token).
class TreeDrafter {
 public:
  virtual ~TreeDrafter() = default;
  // int64 [B, shape.size()] on the host.
  virtual at::Tensor propose(const BatchState& state, const TreeShape& shape) = 0;
};

// Drafts with a model, greedily ranked: one pass per depth over each row's content and its tree
// so far, each node seeing its ancestors. No cache: a reference, not a fast path.
class ModelTreeDrafter final : public TreeDrafter {
 public:
  explicit ModelTreeDrafter(const Transformer& draft) : draft_(draft) {}
  at::Tensor propose(const BatchState& state, const TreeShape& shape) override;

 private:
  const Transformer& draft_;
};

// Drafts a tree that follows an acceptance script: on one branch, a different sibling for each
// row, round and depth, a row proposes its true continuation as deep as the script says it is
// right that round, and a wrong token below; every other node is wrong. Patterns of acceptance
// through any branch are chosen rather than hoped for.
class ScriptedTreeDrafter final : public TreeDrafter {
 public:
  explicit ScriptedTreeDrafter(ScriptedDrafts script) : script_(std::move(script)) {}
  at::Tensor propose(const BatchState& state, const TreeShape& shape) override;

 private:
  ScriptedDrafts script_;
};

}  // namespace specgate
