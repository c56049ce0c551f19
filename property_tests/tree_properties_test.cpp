// Token trees as EAGLE and Medusa verify them, on generated shapes: what the greedy target
// accepts, and one target pass over a tree against each of its paths run alone.
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "impl/decoding/token_tree.h"
#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"
#include "impl/model/weights.h"
#include "property_tests/generators/model_gen.h"

namespace specgate {
namespace {

// Any shape of up to `most` nodes: chains, stars, one node, none, wide levels and all between.
TreeShape any_tree(int64_t most) {
  const auto count = *rc::gen::inRange<int64_t>(0, most + 1);
  std::vector<int64_t> parents;
  for (int64_t node = 0; node < count; ++node) parents.push_back(*rc::gen::inRange<int64_t>(-1, node));
  return TreeShape(parents);
}

std::vector<int64_t> ranks_of(const TreeShape& shape, const std::vector<int64_t>& path) {
  std::vector<int64_t> ranks;
  for (const int64_t node : path) ranks.push_back(shape.rank(node));
  return ranks;
}

// Every node whose path the target's choices agree with all the way down, against what
// greedy_acceptance keeps: the longest such path, of equally long ones the first in sibling order.
RC_GTEST_PROP(TreeProperties, GreedyAcceptanceKeepsTheLongestAgreeingPath, ()) {
  const TreeShape shape = any_tree(24);
  const int64_t count = shape.size();
  const auto tokens = *rc::gen::container<std::vector<int64_t>>(count, rc::gen::inRange<int64_t>(0, 3));
  const auto choices = *rc::gen::container<std::vector<int64_t>>(count + 1, rc::gen::inRange<int64_t>(0, 3));
  std::vector<int64_t> best;
  for (int64_t node = 0; node < count; ++node) {
    const std::vector<int64_t> path = shape.path_to(node);
    bool agrees = true;
    for (const int64_t on_path : path) agrees = agrees && tokens[on_path] == choices[shape.parent(on_path) + 1];
    if (agrees && (path.size() > best.size() || (path.size() == best.size() && ranks_of(shape, path) < ranks_of(shape, best))))
      best = path;
  }
  const TreeAcceptance accepted = greedy_acceptance(shape, tokens, choices);
  RC_ASSERT(accepted.path == best);
  RC_ASSERT(accepted.bonus == choices[best.empty() ? 0 : best.back() + 1]);
}

at::Tensor last_logits_alone(const Transformer& model, const std::vector<int64_t>& ids) {
  const auto n = static_cast<int64_t>(ids.size());
  const auto kLong = at::TensorOptions().dtype(at::kLong);
  const at::Tensor hidden = model.forward(at::tensor(ids, kLong).unsqueeze(0), at::arange(n, kLong).unsqueeze(0),
                                          at::ones({1, n}, at::kBool), nullptr);
  return model.logits(hidden)[0][n - 1];
}

// One pass over a row's last token and a tree of drafts after its cached prompt, each offset
// seeing the prompt and its own path (TreeShape::visibility) at the root's position plus its
// depth, gives every node the logits of its path run alone after the prompt (float64), whatever
// the architecture and the shape, sliding windows counted in positions.
RC_GTEST_PROP(TreeProperties, ATreePassGivesEachNodeTheLogitsOfItsPathAlone, ()) {
  const ModelConfig config = *gen::tiny_model_config();
  const Transformer model(config, random_weights(config, at::TensorOptions().dtype(at::kDouble), *rc::gen::arbitrary<uint32_t>()));
  const auto prompt = *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(1, 12), rc::gen::inRange<int64_t>(0, 256));
  const TreeShape shape = any_tree(12);
  const auto tokens = *rc::gen::container<std::vector<int64_t>>(shape.size(), rc::gen::inRange<int64_t>(0, 256));
  const auto cached = static_cast<int64_t>(prompt.size()) - 1, offsets = shape.size() + 1;
  const auto kLong = at::TensorOptions().dtype(at::kLong);

  KVCache cache = model.make_cache(1, cached + offsets);
  if (cached > 0)
    model.forward(at::tensor(std::vector<int64_t>(prompt.begin(), prompt.end() - 1), kLong).unsqueeze(0),
                  at::arange(cached, kLong).unsqueeze(0), at::ones({1, cached}, at::kBool), &cache);
  std::vector<int64_t> pass{prompt.back()}, positions;
  pass.insert(pass.end(), tokens.begin(), tokens.end());
  for (const int64_t depth : shape.depth_offsets()) positions.push_back(cached + depth);
  const at::Tensor query_positions = at::tensor(positions, kLong).unsqueeze(0);
  const at::Tensor key_positions = at::cat({at::arange(cached, kLong).unsqueeze(0), query_positions}, 1);
  const at::Tensor key_valid = at::cat({at::ones({offsets, cached}, at::kBool), shape.visibility()}, 1).unsqueeze(0).logical_and(
      within_window(query_positions, key_positions, config.sliding_window));
  const at::Tensor logits = model.logits(model.forward(at::tensor(pass, kLong).unsqueeze(0), query_positions, key_valid, &cache))[0];
  for (int64_t node = -1; node < shape.size(); ++node) {
    std::vector<int64_t> alone = prompt;
    if (node >= 0) {
      for (const int64_t on_path : shape.path_to(node)) alone.push_back(tokens[on_path]);
    }
    const double error = (logits[node + 1] - last_logits_alone(model, alone)).abs().max().item<double>();
    RC_ASSERT(error < 1e-9);
  }
}

}  // namespace
}  // namespace specgate
