#include "impl/decoding/tree_drafter.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include <ATen/ATen.h>

#include "impl/decoding/decode_types.h"
#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"

namespace specgate {
namespace {

// A draft model's K/V of each sequence's content before its root (its last token), kept from
// round to round: a round feeds only what the content gained since, then each tree pass over
// the root and the nodes, whose slots it drops again.
class ContentCaches {
 public:
  ContentCaches(const Transformer& draft, int64_t max_nodes) : draft_(draft), max_nodes_(max_nodes) {}

  // Forgets the sequences that left the batch.
  void keep_only(const BatchState& state) {
    std::erase_if(caches_, [&](const auto& entry) {
      return std::none_of(state.rows.begin(), state.rows.end(), [&](const Row& row) { return row.sequence_index == entry.first; });
    });
  }

  // The draft's logits [shape.size() + 1, V] at the row's root and its nodes (`node_tokens`), each
  // node at the root's position plus its depth, seeing the content and its own path.
  at::Tensor tree_logits(const Row& row, const TreeShape& shape, const std::vector<int64_t>& node_tokens) {
    Cached& cached =
        caches_.try_emplace(row.sequence_index, draft_, cache_capacity(row.prompt_length + row.max_new_tokens, max_nodes_))
            .first->second;
    const auto before_root = static_cast<int64_t>(row.tokens.size()) - 1;
    feed_content(cached, row.tokens, before_root);
    const at::TensorOptions on_device = at::TensorOptions().dtype(at::kLong).device(draft_.options().device());
    std::vector<int64_t> tokens = {row.tokens.back()}, positions;
    tokens.insert(tokens.end(), node_tokens.begin(), node_tokens.end());
    for (const int64_t depth : shape.depth_offsets()) positions.push_back(before_root + depth);
    const at::Tensor query_positions = at::tensor(positions, at::kLong).unsqueeze(0);
    const at::Tensor key_positions = at::cat({at::arange(before_root, at::kLong).unsqueeze(0), query_positions}, 1);
    const at::Tensor valid =
        at::cat({at::ones({1, shape.size() + 1, before_root}, at::kBool), shape.visibility().unsqueeze(0)}, 2)
            .logical_and(within_window(query_positions, key_positions, draft_.config().sliding_window));
    const at::Tensor logits = draft_.logits(draft_.forward(at::tensor(tokens, on_device).unsqueeze(0),
                                                           query_positions.to(on_device), valid.to(draft_.options().device()),
                                                           &cached.cache))[0];
    cached.cache.truncate(before_root);
    return logits;
  }

 private:
  struct Cached {
    Cached(const Transformer& draft, int64_t capacity) : cache(draft.make_cache(1, capacity)) {}
    KVCache cache;
    std::vector<int64_t> tokens;  // whose K/V it holds
  };

  // Brings `cached` to the K/V of content[0, length): keeps what it holds of that, feeds the rest.
  void feed_content(Cached& cached, const std::vector<int64_t>& content, int64_t length) const {
    const auto common = static_cast<int64_t>(
        std::mismatch(cached.tokens.begin(), cached.tokens.end(), content.begin(), content.begin() + length).first -
        cached.tokens.begin());
    cached.cache.truncate(common);
    cached.tokens.assign(content.begin(), content.begin() + length);
    if (common == length) return;
    const at::TensorOptions on_device = at::TensorOptions().dtype(at::kLong).device(draft_.options().device());
    const std::vector<int64_t> fed(content.begin() + common, content.begin() + length);
    draft_.forward(at::tensor(fed, on_device).unsqueeze(0), at::arange(common, length, on_device).unsqueeze(0),
                   at::ones({1, length}, on_device.dtype(at::kBool)), &cached.cache);
  }

  const Transformer& draft_;
  const int64_t max_nodes_;
  std::map<int64_t, Cached> caches_;  // by sequence
};

// Each row's tree: its shape and its nodes' tokens, padded with zeros to the widest tree.
DraftTrees padded(std::vector<TreeShape> shapes, const std::vector<std::vector<int64_t>>& tokens) {
  int64_t width = 0;
  for (const TreeShape& shape : shapes) width = std::max(width, shape.size());
  at::Tensor out = at::zeros({static_cast<int64_t>(shapes.size()), width}, at::kLong);
  for (size_t row = 0; row < tokens.size(); ++row) {
    const auto nodes = static_cast<int64_t>(tokens[row].size());
    if (nodes > 0) out[static_cast<int64_t>(row)].narrow(0, 0, nodes).copy_(at::tensor(tokens[row], at::kLong));
  }
  return {std::move(shapes), out};
}

class StaticTreeDrafter final : public TreeDrafter {
 public:
  StaticTreeDrafter(const Transformer& draft, TreeShape shape)
      : shape_(std::move(shape)), caches_(draft, max_tree_nodes(shape_)) {}

  DraftTrees propose(const BatchState& state) override {
    caches_.keep_only(state);
    std::vector<std::vector<int64_t>> tokens;
    for (const Row& row : state.rows) {
      std::vector<int64_t>& drafted = tokens.emplace_back(static_cast<size_t>(shape_.size()), 0);
      for (int64_t depth = 1; depth <= shape_.max_depth(); ++depth) {
        const at::Tensor logits = caches_.tree_logits(row, shape_, drafted);
        for (int64_t node = 0; node < shape_.size(); ++node) {
          if (shape_.depth(node) != depth) continue;
          const at::Tensor ranked = std::get<1>(logits[shape_.parent(node) + 1].topk(shape_.rank(node) + 1));
          drafted[node] = ranked[shape_.rank(node)].item<int64_t>();
        }
      }
    }
    return padded(std::vector<TreeShape>(state.rows.size(), shape_), tokens);
  }
  int64_t max_nodes() const override { return max_tree_nodes(shape_); }

 private:
  const TreeShape shape_;
  ContentCaches caches_;
};

class DynamicTreeDrafter final : public TreeDrafter {
 public:
  DynamicTreeDrafter(const Transformer& draft, TopkTree tree) : tree_(tree), caches_(draft, tree.topk * tree.depth) {}

  DraftTrees propose(const BatchState& state) override {
    caches_.keep_only(state);
    std::vector<TreeShape> shapes;
    std::vector<std::vector<int64_t>> tokens;
    for (const Row& row : state.rows) {
      auto [shape, drafted] = kept(grow(row));
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

  Grown grow(const Row& row) {
    Grown g;
    std::vector<int64_t> level = {-1};
    for (int64_t depth = 1; depth <= tree_.depth; ++depth) {
      const at::Tensor logits = caches_.tree_logits(row, TreeShape(g.parents, g.ranks), g.tokens);
      const int64_t topk = std::min(tree_.topk, logits.size(1));
      struct Candidate {
        double score;
        int64_t parent, rank, token;
      };
      std::vector<Candidate> candidates;
      for (const int64_t parent : level) {
        const auto [log_p, ranked] = logits[parent + 1].to(at::kDouble).log_softmax(-1).topk(topk);
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

  const TopkTree tree_;
  ContentCaches caches_;  // a tree grows to topk x depth nodes before the likeliest are kept
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
