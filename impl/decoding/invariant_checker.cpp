#include "impl/decoding/invariant_checker.h"

#include <algorithm>
#include <sstream>

#include <ATen/ATen.h>

#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"

namespace specgate {
namespace {

double tolerance(at::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble:
      return 1e-9;
    case at::kFloat:
      return 1e-4;
    default:
      return 5e-2;
  }
}

[[noreturn]] void violated(const std::string& message, std::optional<int64_t> sequence = std::nullopt) {
  throw InvariantViolation(message, sequence);
}

// A round's tokens end at the first EOS and at max_new_tokens, exactly there: what a row that
// had generated `generated_before` tokens gains of `proposed` is `appended`.
void check_appended(const std::string& where, int64_t sequence, const std::vector<int64_t>& proposed,
                    int64_t generated_before, int64_t max_new_tokens, const std::vector<int64_t>& appended,
                    const std::vector<int64_t>& eos) {
  std::vector<int64_t> expected;
  for (int64_t token : proposed) {
    if (generated_before + static_cast<int64_t>(expected.size()) == max_new_tokens) break;
    expected.push_back(token);
    if (std::find(eos.begin(), eos.end(), token) != eos.end()) break;
  }
  if (appended == expected) return;
  std::ostringstream message;
  message << where << "appended " << appended.size() << " tokens (";
  for (size_t t = 0; t < appended.size(); ++t) message << (t ? " " : "") << appended[t];
  message << ") where the round's accounting gives " << expected.size() << " (";
  for (size_t t = 0; t < expected.size(); ++t) message << (t ? " " : "") << expected[t];
  message << ")";
  violated(message.str(), sequence);
}

// The most nodes of a path below `at` (-1: the root) whose every token is the target's choice
// after its parent.
int64_t longest_agreeing(const TreeShape& shape, int64_t at, const std::vector<int64_t>& tokens,
                         const std::vector<int64_t>& choices) {
  int64_t longest = 0;
  for (const int64_t child : shape.children(at)) {
    if (tokens[child] == choices[at + 1]) longest = std::max(longest, 1 + longest_agreeing(shape, child, tokens, choices));
  }
  return longest;
}

}  // namespace

void InvariantChecker::check_layout(const BatchState& state, const KVCache& target_cache, const Transformer* draft_model,
                                    const KVCache* draft_cache) const {
  int64_t smallest_padding = INT64_MAX;
  for (size_t i = 0; i < state.rows.size(); ++i) {
    const int64_t padding = state.padding(i);
    if (padding < 0) violated("I1: row " + std::to_string(i) + " holds more content than the width " + std::to_string(state.width));
    smallest_padding = std::min(smallest_padding, padding);
    if (state.rows[i].position_padding != padding)
      violated("I2: row " + std::to_string(i) + ": position ids computed with padding " +
               std::to_string(state.rows[i].position_padding) + ", but the row's padding is " + std::to_string(padding),
               state.rows[i].sequence_index);
  }
  if (!state.rows.empty() && smallest_padding != 0)
    violated("I1: width " + std::to_string(state.width) + " exceeds the longest row: every row has " +
             std::to_string(smallest_padding) + " or more padding slots");
  check_cache("target", target_, target_cache, state, false);
  if (draft_model != nullptr) check_cache("draft", *draft_model, *draft_cache, state, true);
}

void InvariantChecker::check_cache(const char* which, const Transformer& model, const KVCache& cache,
                                   const BatchState& state, bool draft) const {
  const int64_t expected_length = state.cache_length();
  if (cache.length() != expected_length)
    violated(std::string("I3: ") + which + " cache holds " + std::to_string(cache.length()) + " slots, expected " +
             std::to_string(expected_length));
  const double limit = tolerance(model.options().dtype().toScalarType());
  const auto ids = at::TensorOptions().dtype(at::kLong).device(model.options().device());
  for (size_t i = 0; i < state.rows.size(); ++i) {
    const Row& row = state.rows[i];
    const RowSlots& slots = draft ? row.draft_slots : row.target_slots;
    const int64_t cached = slots.count;
    const int64_t lacking = row.content() - cached;
    if (lacking != 1 && !(draft && lacking == 2))
      violated(std::string("I3: ") + which + " cache of row " + std::to_string(i) + " holds " + std::to_string(cached) +
               " of its " + std::to_string(row.content()) + " tokens",
               row.sequence_index);
    const int64_t padding = state.padding(i);
    if (slots.first != padding)
      violated(std::string("I3: ") + which + " cache of row " + std::to_string(i) + " holds its tokens from slot " +
                   std::to_string(slots.first) + ", but the row's padding is " + std::to_string(padding),
               row.sequence_index);
    KVCache alone = model.make_cache(1, cached);
    model.forward(at::tensor(std::vector<int64_t>(row.tokens.begin(), row.tokens.begin() + cached), ids).unsqueeze(0),
                  at::arange(cached, ids).unsqueeze(0), at::ones({1, cached}, ids.dtype(at::kBool)), &alone);
    // The tokens whose slots a later pass may still read (all of them without a sliding window).
    const int64_t first = std::min(std::max<int64_t>(cache.first_attended_slot() - padding, 0), cached);
    if (first == cached) continue;
    for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
      const at::Tensor keys = cache.keys(layer)[i].narrow(1, padding + first, cached - first);
      const at::Tensor values = cache.values(layer)[i].narrow(1, padding + first, cached - first);
      for (const auto& [name, batched, reference] :
           {std::tuple{"K", keys, alone.keys(layer)[0].narrow(1, first, cached - first)},
            std::tuple{"V", values, alone.values(layer)[0].narrow(1, first, cached - first)}}) {
        const at::Tensor error = (batched - reference).abs().amax({0, 2});  // per slot
        const int64_t worst = first + error.argmax().item<int64_t>();
        const double worst_error = error[worst - first].item<double>();
        if (!(worst_error <= limit)) {
          std::ostringstream message;
          message << "I3: " << which << " cache, row " << i << " (sequence " << row.sequence_index << "), layer "
                  << layer << ", slot " << padding + worst << " (token " << worst << "): " << name
                  << " differs from a standalone pass by " << worst_error << " (first values "
                  << batched.select(1, worst - first).flatten()[0].item<double>() << " vs "
                  << reference.select(1, worst - first).flatten()[0].item<double>() << ")";
          violated(message.str(), row.sequence_index);
        }
      }
    }
  }
}

void InvariantChecker::check_round(const std::vector<RoundRecord>& records) const {
  const auto& eos = options_.eos_ids;
  for (const RoundRecord& r : records) {
    const RowDecision& decision = r.decision;
    const std::string where = "I4: sequence " + std::to_string(r.sequence_index) + ": ";
    const int64_t k = static_cast<int64_t>(decision.drafted.size());
    if (decision.accepted > k)
      violated(where + "kept " + std::to_string(decision.accepted) + " drafts of the " + std::to_string(k) +
                   " it proposed",
               r.sequence_index);
    std::vector<int64_t> proposed(decision.drafted.begin(),
                                  decision.drafted.begin() + std::min<int64_t>(decision.accepted, k));
    if (r.greedy && !options_.rollback) {
      int64_t agreeing = 0;
      while (agreeing < k && decision.drafted[agreeing] == decision.target_choice[agreeing]) ++agreeing;
      if (decision.accepted != agreeing)
        violated(where + "kept " + std::to_string(decision.accepted) + " drafts, but the agreeing prefix is " +
                 std::to_string(agreeing),
                 r.sequence_index);
    }
    // Greedy: the bonus is the target's choice. Sampling: it has no reference here, so the
    // row's own bonus stands in for it and only the count and the kept drafts are checked.
    if (r.greedy) {
      proposed.push_back(decision.target_choice.at(std::min<int64_t>(decision.accepted, k)));
    } else if (static_cast<int64_t>(r.appended.size()) > decision.accepted) {
      proposed.push_back(r.appended[decision.accepted]);
    }
    check_appended(where, r.sequence_index, proposed, r.generated_before, r.max_new_tokens, r.appended, eos);
  }
}

void InvariantChecker::check_tree_pass(const BatchState& state, const std::vector<TreeShape>& shapes,
                                       const at::Tensor& positions, const at::Tensor& valid) const {
  const at::Tensor position = positions.cpu().contiguous(), sees = valid.cpu().contiguous();
  const auto pos = position.accessor<int64_t, 2>();
  const auto seen = sees.accessor<bool, 3>();
  const int64_t root = state.cache_length();
  const std::optional<int64_t> window = target_.config().sliding_window;
  for (int64_t i = 0; i < state.batch_size(); ++i) {
    const TreeShape& shape = shapes[i];
    const int64_t padding = state.padding(static_cast<size_t>(i)), root_position = state.rows[i].content() - 1;
    const int64_t sequence = state.rows[i].sequence_index;
    const std::vector<int64_t> depths = shape.depth_offsets();
    for (int64_t q = 0; q <= shape.size(); ++q) {
      const std::string where = "row " + std::to_string(i) + ", tree offset " + std::to_string(q);
      if (pos[i][q] != root_position + depths[q])
        violated("I2 (trees): " + where + " has position id " + std::to_string(pos[i][q]) + ", not the root's " +
                     std::to_string(root_position) + " plus its depth " + std::to_string(depths[q]), sequence);
      for (int64_t s = 0; s < root; ++s) {
        const bool in_window = !window || pos[i][q] - (s - padding) < *window;
        if (seen[i][q][s] != (s >= padding && in_window))
          violated("tree mask: " + where + (seen[i][q][s] ? " sees" : " does not see") + " content slot " +
                       std::to_string(s) + " (padding " + std::to_string(padding) + ")", sequence);
      }
      std::vector<bool> ancestor(static_cast<size_t>(seen.size(2) - root), false);
      ancestor[0] = true;
      if (q > 0) {
        for (const int64_t node : shape.path_to(q - 1)) ancestor[node + 1] = true;
      }
      for (int64_t k = 0; k < seen.size(2) - root; ++k) {
        const bool visible = ancestor[k] && (!window || pos[i][q] - pos[i][k] < *window);
        if (seen[i][q][root + k] != visible)
          violated("tree mask: " + where + (visible ? " does not see" : " sees") + " tree offset " + std::to_string(k) +
                       (visible ? ", an ancestor in its window" : ", not an ancestor in its window"), sequence);
      }
    }
  }
}

void InvariantChecker::check_tree_round(const std::vector<TreeRoundRecord>& records) const {
  for (const TreeRoundRecord& r : records) {
    const std::string where = "I4 (trees): sequence " + std::to_string(r.sequence_index) + ": ";
    const TreeAcceptance& decision = r.decision;
    const std::vector<int64_t>& choices = decision.target_choices;
    std::vector<int64_t> proposed;
    int64_t parent = -1;
    for (const int64_t node : decision.path) {
      if (node < 0 || node >= r.shape.size() || r.shape.parent(node) != parent)
        violated(where + "kept node " + std::to_string(node) + ", not a child of " +
                     (parent < 0 ? std::string("the root") : "node " + std::to_string(parent)),
                 r.sequence_index);
      if (!choices.empty() && r.tokens[node] != choices[parent + 1])
        violated(where + "kept node " + std::to_string(node) + " (token " + std::to_string(r.tokens[node]) +
                     ") where the target chose " + std::to_string(choices[parent + 1]),
                 r.sequence_index);
      proposed.push_back(r.tokens[node]);
      parent = node;
    }
    if (!choices.empty()) {
      const int64_t longest = longest_agreeing(r.shape, -1, r.tokens, choices);
      if (longest != static_cast<int64_t>(decision.path.size()))
        violated(where + "kept " + std::to_string(decision.path.size()) + " nodes, but the longest agreeing path has " +
                     std::to_string(longest),
                 r.sequence_index);
      if (decision.bonus != choices[parent + 1])
        violated(where + "took " + std::to_string(decision.bonus) + " after its path, where the target chose " +
                     std::to_string(choices[parent + 1]),
                 r.sequence_index);
    }
    proposed.push_back(decision.bonus);
    check_appended(where, r.sequence_index, proposed, r.generated_before, r.max_new_tokens, r.appended, options_.eos_ids);
  }
}

}  // namespace specgate
