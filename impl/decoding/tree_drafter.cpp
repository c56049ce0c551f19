#include "impl/decoding/tree_drafter.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include <ATen/ATen.h>

#include "impl/model/transformer.h"

namespace specgate {
namespace {

// The draft's logits [content + nodes, V] over one row: its content causally, then its tree's
// nodes at the root's position plus their depth, each seeing the content before the root (its
// last token) and its own path. Offset o of the tree (0: the root) is row length - 1 + o.
at::Tensor draft_logits(const Transformer& draft, const std::vector<int64_t>& content, const TreeShape& shape,
                     const std::vector<int64_t>& node_tokens) {
  const auto length = static_cast<int64_t>(content.size()), total = length + shape.size();
  at::Tensor valid = at::ones({total, total}, at::kBool);
  valid.slice(0, length - 1).slice(1, length - 1).copy_(shape.visibility());
  std::vector<int64_t> positions(static_cast<size_t>(length));
  std::iota(positions.begin(), positions.end(), 0);
  const std::vector<int64_t> depths = shape.depth_offsets();
  for (int64_t node = 0; node < shape.size(); ++node) positions.push_back(length - 1 + depths[node + 1]);
  std::vector<int64_t> tokens = content;
  tokens.insert(tokens.end(), node_tokens.begin(), node_tokens.end());
  const at::Tensor position_ids = at::tensor(positions, at::kLong).unsqueeze(0);
  valid = valid.logical_and(within_window(position_ids, position_ids, draft.config().sliding_window)[0]);
  const at::TensorOptions on_device = at::TensorOptions().dtype(at::kLong).device(draft.options().device());
  return draft.logits(draft.forward(at::tensor(tokens, on_device).unsqueeze(0), position_ids.to(on_device),
                                    valid.to(on_device.dtype(at::kBool)).unsqueeze(0), nullptr))[0];
}

DraftTrees padded(std::vector<TreeShape> shapes, const std::vector<std::vector<int64_t>>& tokens) {
  int64_t width = 0;
  for (const TreeShape& shape : shapes) width = std::max(width, shape.size());
  at::Tensor out = at::zeros({static_cast<int64_t>(shapes.size()), width}, at::kLong);
  for (size_t row = 0; row < tokens.size(); ++row) {
    if (!tokens[row].empty()) out[static_cast<int64_t>(row)].narrow(0, 0, static_cast<int64_t>(tokens[row].size())).copy_(at::tensor(tokens[row], at::kLong));
  }
  return {std::move(shapes), out};
}

class StaticTreeDrafter final : public TreeDrafter {
 public:
  StaticTreeDrafter(const Transformer& draft, TreeShape shape) : draft_(draft), shape_(std::move(shape)) {}

  DraftTrees propose(const BatchState& state) override {
    std::vector<std::vector<int64_t>> tokens;
    for (const Row& row : state.rows) {
      const int64_t slot0 = static_cast<int64_t>(row.tokens.size()) - 1;
      std::vector<int64_t>& drafted = tokens.emplace_back(static_cast<size_t>(shape_.size()), 0);
      for (int64_t depth = 1; depth <= shape_.max_depth(); ++depth) {
        const at::Tensor logits = draft_logits(draft_, row.tokens, shape_, drafted);
        for (int64_t node = 0; node < shape_.size(); ++node) {
          if (shape_.depth(node) != depth) continue;
          const at::Tensor ranked = std::get<1>(logits[slot0 + shape_.parent(node) + 1].topk(shape_.rank(node) + 1));
          drafted[node] = ranked[shape_.rank(node)].item<int64_t>();
        }
      }
    }
    return padded(std::vector<TreeShape>(state.rows.size(), shape_), tokens);
  }
  int64_t max_nodes() const override { return max_tree_nodes(shape_); }

 private:
  const Transformer& draft_;
  const TreeShape shape_;
};

class DynamicTreeDrafter final : public TreeDrafter {
 public:
  DynamicTreeDrafter(const Transformer& draft, TopkTree tree) : draft_(draft), tree_(tree) {}

  DraftTrees propose(const BatchState& state) override {
    std::vector<TreeShape> shapes;
    std::vector<std::vector<int64_t>> tokens;
    for (const Row& row : state.rows) {
      auto [shape, drafted] = kept(grow(row.tokens));
      shapes.push_back(std::move(shape));
      tokens.push_back(std::move(drafted));
    }
    return padded(std::move(shapes), tokens);
  }
  int64_t max_nodes() const override { return max_tree_nodes(tree_); }

 private:
  // Every node expanded: parents, ranks among the parent's choices, tokens and the draft's log
  // probability of the path to each.
  struct Grown {
    std::vector<int64_t> parents, ranks, tokens;
    std::vector<double> scores;
  };

  Grown grow(const std::vector<int64_t>& content) const {
    Grown g;
    const int64_t slot0 = static_cast<int64_t>(content.size()) - 1;
    std::vector<int64_t> level = {-1};
    for (int64_t depth = 1; depth <= tree_.depth; ++depth) {
      const at::Tensor logits = draft_logits(draft_, content, TreeShape(g.parents, g.ranks), g.tokens);
      const int64_t topk = std::min(tree_.topk, logits.size(1));
      struct Candidate {
        double score;
        int64_t parent, rank, token;
      };
      std::vector<Candidate> candidates;
      for (const int64_t parent : level) {
        const auto [log_p, ranked] = logits[slot0 + parent + 1].to(at::kDouble).log_softmax(-1).topk(topk);
        const double above = parent < 0 ? 0.0 : g.scores[parent];
        for (int64_t r = 0; r < topk; ++r)
          candidates.push_back({above + log_p[r].item<double>(), parent, r, ranked[r].item<int64_t>()});
      }
      std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
      candidates.resize(static_cast<size_t>(std::min<int64_t>(topk, static_cast<int64_t>(candidates.size()))));
      level.clear();
      for (const Candidate& c : candidates) {
        level.push_back(static_cast<int64_t>(g.parents.size()));
        g.parents.push_back(c.parent);
        g.ranks.push_back(c.rank);
        g.tokens.push_back(c.token);
        g.scores.push_back(c.score);
      }
    }
    return g;
  }

  // The `nodes` likeliest paths, in the order they were grown. A child is never likelier than
  // its parent, and of equals the earlier grown is taken first, so every kept node's parent is kept.
  std::pair<TreeShape, std::vector<int64_t>> kept(const Grown& g) const {
    std::vector<int64_t> order(g.parents.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return g.scores[a] > g.scores[b]; });
    order.resize(static_cast<size_t>(std::min<int64_t>(tree_.nodes, static_cast<int64_t>(order.size()))));
    std::sort(order.begin(), order.end());
    std::vector<int64_t> index_of(g.parents.size(), -1), parents, ranks, tokens;
    for (const int64_t node : order) {
      index_of[node] = static_cast<int64_t>(parents.size());
      parents.push_back(g.parents[node] < 0 ? -1 : index_of[g.parents[node]]);
      ranks.push_back(g.ranks[node]);
      tokens.push_back(g.tokens[node]);
    }
    return {TreeShape(std::move(parents), std::move(ranks)), std::move(tokens)};
  }

  const Transformer& draft_;
  const TopkTree tree_;
};

}  // namespace

int64_t max_tree_nodes(const TreePolicy& policy) {
  if (const TreeShape* shape = std::get_if<TreeShape>(&policy)) return shape->size();
  return std::get<TopkTree>(policy).nodes;
}

std::unique_ptr<TreeDrafter> make_model_tree_drafter(const Transformer& draft, const TreePolicy& policy) {
  if (const TreeShape* shape = std::get_if<TreeShape>(&policy)) return std::make_unique<StaticTreeDrafter>(draft, *shape);
  return std::make_unique<DynamicTreeDrafter>(draft, std::get<TopkTree>(policy));
}

ScriptedTreeDrafter::ScriptedTreeDrafter(ScriptedDrafts script, std::vector<TreeShape> shapes)
    : script_(std::move(script)), shapes_(std::move(shapes)) {
  for (const TreeShape& shape : shapes_) max_nodes_ = std::max(max_nodes_, shape.size());
}

DraftTrees ScriptedTreeDrafter::propose(const BatchState& state) {
  std::vector<TreeShape> shapes;
  std::vector<std::vector<int64_t>> tokens;
  for (const Row& r : state.rows) {
    const TreeShape& shape = shapes.emplace_back(shapes_[static_cast<size_t>(r.sequence_index) % shapes_.size()]);
    std::vector<int64_t>& drafted = tokens.emplace_back();
    const std::vector<int64_t>& continuation = script_.continuations.at(r.sequence_index);
    const auto round = static_cast<int64_t>(r.accept_lengths.size());
    const int64_t right = script_.script(r.sequence_index, round);
    for (int64_t node = 0; node < shape.size(); ++node) {
      const std::vector<int64_t>& siblings = shape.children(shape.parent(node));
      const auto place = std::find(siblings.begin(), siblings.end(), node) - siblings.begin();
      const int64_t depth = shape.depth(node);
      const int64_t truth = continuation.at(static_cast<size_t>(r.generated() + depth - 1));
      const bool on_branch = place == (r.sequence_index + round + depth) % static_cast<int64_t>(siblings.size());
      drafted.push_back(on_branch && depth <= right ? truth : (truth + 1) % script_.vocab_size);
    }
  }
  return padded(std::move(shapes), tokens);
}

}  // namespace specgate
