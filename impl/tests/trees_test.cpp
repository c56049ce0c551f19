#include "impl/decoding/eqspec.h"

#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "impl/common/error.h"
#include "impl/decoding/exspec.h"
#include "impl/decoding/faults.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using namespace specgate::test_support;

// The oracle's greedy continuation of every request, `extra` tokens past its max_new_tokens.
std::map<int64_t, std::vector<int64_t>> oracle_continuations(const std::vector<SequenceRequest>& requests,
                                                             const DecodeOptions& options, int64_t extra = 0) {
  std::map<int64_t, std::vector<int64_t>> out;
  for (const SequenceRequest& r : requests) {
    const OracleOptions alone{.max_new_tokens = r.max_new_tokens.value_or(options.max_new_tokens) + extra, .top_logprobs = 0};
    out[r.sequence_index] = oracle_generate(models().target, r.prompt, alone, 0).tokens;
  }
  return out;
}

// Knows the target's answers: on one branch of each node, chosen by the row and the round, it
// drafts them, elsewhere a token the target never picks there. Rows accept different path
// lengths through different siblings, so the kept path's K/V moves. Sequence j drafts
// shapes[j % shapes.size()].
class OracleTreeDrafter final : public TreeDrafter {
 public:
  OracleTreeDrafter(std::map<int64_t, std::vector<int64_t>> answers, std::vector<TreeShape> shapes)
      : answers_(std::move(answers)), shapes_(std::move(shapes)) {}

  DraftTrees propose(const BatchState& state) override {
    DraftTrees trees{.tokens = at::zeros({state.batch_size(), max_nodes()}, at::kLong)};
    for (int64_t row = 0; row < state.batch_size(); ++row) {
      const Row& r = state.rows[row];
      const TreeShape& shape = trees.shapes.emplace_back(shapes_[static_cast<size_t>(r.sequence_index) % shapes_.size()]);
      const std::vector<int64_t>& answer = answers_.at(r.sequence_index);
      for (int64_t node = 0; node < shape.size(); ++node) {
        const auto siblings = static_cast<int64_t>(shape.children(shape.parent(node)).size());
        const size_t at = static_cast<size_t>(r.generated() + shape.depth(node) - 1);
        const int64_t right = at < answer.size() ? answer[at] : 0;
        const bool on_branch = shape.rank(node) == (r.sequence_index + r.generated() + shape.depth(node)) % siblings;
        trees.tokens[row][node] = on_branch ? right : (right + 1) % 256;
      }
    }
    return trees;
  }
  int64_t max_nodes() const override {
    int64_t most = 0;
    for (const TreeShape& shape : shapes_) most = std::max(most, shape.size());
    return most;
  }

 private:
  std::map<int64_t, std::vector<int64_t>> answers_;
  std::vector<TreeShape> shapes_;
};

const std::vector<std::vector<int64_t>> kShapes = {
    {},                                  // no node: each round the target's token alone
    {-1},                                // one node
    {-1, 0, 1, 2},                       // a chain
    {-1, -1, -1, -1, -1},                // a star
    {-1, -1, 0, 0, 0, 1, 2},             // EAGLE-like: wide near the root
    {-1, -1, 0, 0, 1, 1, 2, 2, 3, 3},    // binary, three levels
    {-1, 0, 1, -1, 3, -1, 0, 6, 2, 8},   // ragged
};

// Greedy tree decoding gives every request the oracle's tokens, whatever the shape and the
// drafter, in mixed batches with ragged acceptance, each round's cache checked (I1-I3).
TEST(Trees, GreedyEqualsTheOracleOnEveryShape) {
  const std::vector<SequenceRequest> requests = mixed_requests(5, 77);
  const DecodeOptions options = greedy_options(0, 15);
  const auto expected = oracle_continuations(requests, options);
  const auto beyond = oracle_continuations(requests, options, 8);
  for (const std::vector<int64_t>& parents : kShapes) {
    const TreeShape shape(parents);
    OracleTreeDrafter oracle_drafter(beyond, {shape});
    const std::unique_ptr<TreeDrafter> model_drafter = make_model_tree_drafter(models().near_target, shape);
    for (TreeDrafter* drafter : std::vector<TreeDrafter*>{&oracle_drafter, model_drafter.get()}) {
      DecodeStats stats;
      const std::vector<SequenceResult> results = tree_generate(models().target, *drafter, requests, options, &stats);
      ASSERT_EQ(results.size(), requests.size());
      for (const SequenceResult& result : results)
        EXPECT_EQ(result.tokens, expected.at(result.sequence_index)) << "shape of " << parents.size() << " nodes";
      if (drafter == &oracle_drafter && shape.size() > 0) {
        EXPECT_GT(stats.accepted, 0);
      }
    }
  }
}

// Rows of one batch draft trees of different shapes and sizes (every shape above, the empty one
// included): each row's tree is padded to the widest, its padding never seen nor kept, and
// every row is the oracle's, the mask, positions and cache checked every round.
TEST(Trees, RowsOfDifferentShapesShareARound) {
  const std::vector<SequenceRequest> requests = mixed_requests(7, 80);
  DecodeOptions options = greedy_options(0, 16);
  options.check_invariants = true;
  std::vector<TreeShape> shapes;
  for (const std::vector<int64_t>& parents : kShapes) shapes.emplace_back(parents);
  OracleTreeDrafter drafter(oracle_continuations(requests, options, 8), shapes);
  DecodeStats stats;
  for (const SequenceResult& result : tree_generate(models().target, drafter, requests, options, &stats))
    EXPECT_EQ(result.tokens, oracle_continuations(requests, options).at(result.sequence_index));
  EXPECT_GT(stats.accepted, stats.rounds);
}

// EAGLE-2's dynamic trees: every row grows its own tree from the draft's likeliest paths, of
// --tree-nodes nodes, the draft's first choice after the root first; greedy decoding stays the
// oracle's.
TEST(Trees, DynamicTreesDifferAcrossRowsAndStayTheOracles) {
  const std::vector<SequenceRequest> requests = mixed_requests(4, 81);
  DecodeOptions options = greedy_options(0, 12);
  options.check_invariants = true;
  const std::unique_ptr<TreeDrafter> drafter =
      make_model_tree_drafter(models().near_target, TopkTree{.topk = 3, .depth = 3, .nodes = 6});
  EXPECT_EQ(drafter->max_nodes(), 6);
  DecodeStats stats;
  for (const SequenceResult& result : tree_generate(models().target, *drafter, requests, options, &stats))
    EXPECT_EQ(result.tokens, oracle_continuations(requests, options).at(result.sequence_index));
  EXPECT_GT(stats.accepted, 0);

  BatchState state;
  for (const SequenceRequest& request : requests) state.rows.emplace_back(request, options);
  const DraftTrees trees = drafter->propose(state);
  std::set<std::vector<int64_t>> distinct;
  for (int64_t row = 0; row < state.batch_size(); ++row) {
    const TreeShape& shape = trees.shapes[row];
    ASSERT_EQ(shape.size(), 6);
    EXPECT_EQ(shape.parent(0), -1);
    EXPECT_EQ(shape.rank(0), 0);
    std::vector<int64_t> parents;
    for (int64_t node = 0; node < shape.size(); ++node) parents.push_back(shape.parent(node));
    distinct.insert(parents);
    const at::Tensor logits = models().near_target.logits(models().near_target.forward(
        at::tensor(state.rows[row].tokens, at::kLong).unsqueeze(0),
        at::arange(state.rows[row].content(), at::kLong).unsqueeze(0), at::ones({1, state.rows[row].content()}, at::kBool),
        nullptr))[0][-1];
    EXPECT_EQ(trees.tokens[row][0].item<int64_t>(), logits.argmax().item<int64_t>());
  }
  EXPECT_GT(distinct.size(), 1U) << "every row grew the same shape";
}

// The oracle's branch is the second sibling as often as the first: the kept path is not the
// first nodes of the tree, so its K/V must move right after the root's, and a row that took one
// branch must not see the other's.
TEST(Trees, KeepsTheBranchTheTargetTookWhereverItLies) {
  const std::vector<SequenceRequest> requests = mixed_requests(4, 78);
  const DecodeOptions options = greedy_options(0, 20);
  const TreeShape shape({-1, -1, 0, 0, 1, 1, 2, 3, 4, 5});
  OracleTreeDrafter drafter(oracle_continuations(requests, options, 8), {shape});
  DecodeStats stats;
  const std::vector<SequenceResult> results = tree_generate(models().target, drafter, requests, options, &stats);
  const auto expected = oracle_continuations(requests, options);
  for (const SequenceResult& result : results) EXPECT_EQ(result.tokens, expected.at(result.sequence_index));
  EXPECT_GT(stats.accepted, stats.rounds) << "more than one node kept per round, on average";
}

// A row cancelled mid-decode leaves; the others, re-padded, end as the oracle's.
TEST(Trees, ACancelledRowLeavesAndTheOthersGoOnAsAlone) {
  const std::vector<SequenceRequest> requests = mixed_requests(3, 79);
  const DecodeOptions options = greedy_options(0, 18);
  OracleTreeDrafter drafter(oracle_continuations(requests, options, 8), {TreeShape({-1, -1, 0, 1})});
  EqspecDecoder decoder(models().target, drafter, options, 3);
  for (const SequenceRequest& request : requests) decoder.admit(request);
  std::map<int64_t, std::vector<int64_t>> outputs;
  for (int64_t step = 0; decoder.has_work(); ++step) {
    if (step == 2) decoder.cancel(requests[1].sequence_index);
    for (const SequenceResult& result : decoder.step()) outputs[result.sequence_index] = result.tokens;
  }
  auto expected = oracle_continuations(requests, options);
  expected.erase(requests[1].sequence_index);
  EXPECT_EQ(outputs, expected);
}

// Each greedy fault of trees makes the tokens differ from the oracle's or an invariant fail, on
// the tree whose right branch moves between siblings. (The sampling ones are the distribution
// test's.)
TEST(Trees, EveryGreedyTreeFaultIsCaught) {
  const std::vector<SequenceRequest> requests = mixed_requests(4, 78);
  const DecodeOptions options = greedy_options(0, 20);
  const TreeShape shape({-1, -1, 0, 0, 1, 1, 2, 3, 4, 5});
  const auto expected = oracle_continuations(requests, options);
  for (const Fault fault : all_faults()) {
    if (!is_tree_only(fault) || is_sampling_only(fault)) continue;
    SCOPED_TRACE(std::string(fault_name(fault)));
    DecodeOptions faulty = options;
    faulty.faults.add(fault);
    OracleTreeDrafter drafter(oracle_continuations(requests, options, 8), {shape});
    bool caught = false;
    try {
      for (const SequenceResult& result : tree_generate(models().target, drafter, requests, faulty))
        caught = caught || result.tokens != expected.at(result.sequence_index);
    } catch (const InvariantViolation&) {
      caught = true;
    }
    EXPECT_TRUE(caught);
  }
}

// EXSPEC verifies trees on its pool, grouping sequences of one length and re-padding otherwise:
// greedy rows are the oracle's and sampled ones draw what they draw under EQSPEC's layout, the
// mask, positions and cache checked every step.
TEST(Trees, ExspecVerifiesTreesAsEqspecDoes) {
  std::vector<SequenceRequest> requests = mixed_requests(9, 83);
  for (size_t i = 1; i < requests.size(); i += 3) requests[i].sampling = SamplingParams{.temperature = 0.8, .seed = 23};
  DecodeOptions options = greedy_options(0, 14);
  options.check_invariants = true;
  std::vector<TreeShape> shapes;
  for (const std::vector<int64_t>& parents : kShapes) shapes.emplace_back(parents);
  OracleTreeDrafter oracle_drafter(oracle_continuations(requests, options, 8), shapes);
  const std::unique_ptr<TreeDrafter> topk_drafter =
      make_model_tree_drafter(models().near_target, TopkTree{.topk = 2, .depth = 3, .nodes = 4});
  for (TreeDrafter* drafter : std::vector<TreeDrafter*>{&oracle_drafter, topk_drafter.get()}) {
    DecodeOptions tree_options = options;
    tree_options.draft_tokens = drafter->max_nodes();
    ExspecDecoder exspec(models().target, *drafter, options, ExspecOptions{.batch_size = 3, .window = 6},
                         cache_capacity(requests, tree_options));
    const auto pooled = by_sequence(decode_all(exspec, requests));
    const auto laid_out = by_sequence(tree_generate(models().target, *drafter, requests, options));
    EXPECT_EQ(pooled, laid_out);
    for (const SequenceRequest& request : requests) {
      if (!request.sampling) {
        EXPECT_EQ(pooled.at(request.sequence_index), oracle_continuations(requests, options).at(request.sequence_index));
      }
    }
    EXPECT_GT(exspec.exspec_stats().grouped_steps, 0);
    EXPECT_GT(exspec.exspec_stats().fallback_steps, 0);
  }
}

// --check-invariants checks a tree pass's mask and position ids before it runs: a sibling made
// visible, or a position by offset, stops the first round that has one, naming it.
TEST(Trees, CheckInvariantsStopsAWrongMaskOrPositionBeforeThePass) {
  const std::vector<SequenceRequest> requests = mixed_requests(3, 82);
  DecodeOptions options = greedy_options(0, 8);
  options.check_invariants = true;
  const TreeShape shape({-1, -1, 0, 0, 1});
  for (const auto& [fault, says] : {std::pair{Fault::kTreeSiblingVisible, "tree mask: "},
                                    std::pair{Fault::kTreePositionByOffset, "I2 (trees): "}}) {
    SCOPED_TRACE(std::string(fault_name(fault)));
    DecodeOptions faulty = options;
    faulty.faults.add(fault);
    OracleTreeDrafter drafter(oracle_continuations(requests, options, 8), {shape});
    try {
      tree_generate(models().target, drafter, requests, faulty);
      ADD_FAILURE() << "no violation";
    } catch (const InvariantViolation& violation) {
      EXPECT_NE(std::string(violation.what()).find(says), std::string::npos) << violation.what();
    }
  }
}

// --check-invariants checks each row's accounting after a tree round too: a row that keeps the
// tokens a round drafted past max_new_tokens is stopped, naming I4.
TEST(Trees, CheckInvariantsStopsARoundThatKeepsTokensPastTheEnd) {
  const std::vector<SequenceRequest> requests = mixed_requests(3, 86);
  DecodeOptions options = greedy_options(0, 5);
  options.check_invariants = true;
  const TreeShape chain({-1, 0, 1, 2, 3, 4});
  OracleTreeDrafter drafter(oracle_continuations(requests, options, 8), {chain});
  DecodeOptions faulty = options;
  faulty.faults.add(Fault::kTokensAfterEosKept);
  try {
    tree_generate(models().target, drafter, requests, faulty);
    ADD_FAILURE() << "no violation";
  } catch (const InvariantViolation& violation) {
    EXPECT_NE(std::string(violation.what()).find("I4 (trees): "), std::string::npos) << violation.what();
  }
  EXPECT_NO_THROW(tree_generate(models().target, drafter, requests, options));
}

// Sampled and greedy rows share the rounds: each sampled row draws what it draws alone, from its
// own stream, and each greedy row is the oracle's, the invariants held every round.
TEST(Trees, SampledRowsDecodeAsAloneBesideGreedyOnes) {
  std::vector<SequenceRequest> requests = mixed_requests(5, 91);
  for (size_t i = 0; i < requests.size(); i += 2) requests[i].sampling = SamplingParams{.temperature = 0.9, .top_k = 5, .seed = 17};
  DecodeOptions options = greedy_options(0, 14);
  options.check_invariants = true;
  const TreeShape shape({-1, -1, 0, 0, 1, 2});
  const std::unique_ptr<TreeDrafter> drafter = make_model_tree_drafter(models().near_target, shape);
  const auto together = by_sequence(tree_generate(models().target, *drafter, requests, options));
  const auto greedy = oracle_continuations(requests, options);
  int64_t differing = 0;
  for (const SequenceRequest& request : requests) {
    const std::vector<int64_t>& tokens = together.at(request.sequence_index);
    if (!request.sampling) {
      EXPECT_EQ(tokens, greedy.at(request.sequence_index));
      continue;
    }
    const auto alone = tree_generate(models().target, *drafter, std::span(&request, 1), options);
    EXPECT_EQ(tokens, alone.front().tokens) << "sequence " << request.sequence_index;
    differing += tokens != greedy.at(request.sequence_index);
  }
  EXPECT_GT(differing, 0);
}

}  // namespace
}  // namespace specgate
