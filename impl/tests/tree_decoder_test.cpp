#include "impl/decoding/tree_decoder.h"

#include <map>

#include <gtest/gtest.h>

#include "impl/common/error.h"
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
// lengths through different siblings, so the kept path's K/V moves.
class OracleTreeDrafter final : public TreeDrafter {
 public:
  explicit OracleTreeDrafter(std::map<int64_t, std::vector<int64_t>> answers) : answers_(std::move(answers)) {}

  at::Tensor propose(const BatchState& state, const TreeShape& shape) override {
    at::Tensor drafts = at::zeros({state.batch_size(), shape.size()}, at::kLong);
    for (int64_t row = 0; row < state.batch_size(); ++row) {
      const Row& r = state.rows[row];
      const std::vector<int64_t>& answer = answers_.at(r.sequence_index);
      for (int64_t node = 0; node < shape.size(); ++node) {
        const auto siblings = static_cast<int64_t>(shape.children(shape.parent(node)).size());
        const size_t at = static_cast<size_t>(r.generated() + shape.depth(node) - 1);
        const int64_t right = at < answer.size() ? answer[at] : 0;
        const bool on_branch = shape.rank(node) == (r.sequence_index + r.generated() + shape.depth(node)) % siblings;
        drafts[row][node] = on_branch ? right : (right + 1) % 256;
      }
    }
    return drafts;
  }

 private:
  std::map<int64_t, std::vector<int64_t>> answers_;
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
TEST(TreeDecoder, GreedyEqualsTheOracleOnEveryShape) {
  const std::vector<SequenceRequest> requests = mixed_requests(5, 77);
  const DecodeOptions options = greedy_options(0, 15);
  const auto expected = oracle_continuations(requests, options);
  const auto beyond = oracle_continuations(requests, options, 8);
  for (const std::vector<int64_t>& parents : kShapes) {
    const TreeShape shape(parents);
    OracleTreeDrafter oracle_drafter(beyond);
    ModelTreeDrafter model_drafter(models().near_target);
    for (TreeDrafter* drafter : std::vector<TreeDrafter*>{&oracle_drafter, &model_drafter}) {
      DecodeStats stats;
      const std::vector<SequenceResult> results = tree_generate(models().target, *drafter, shape, requests, options, &stats);
      ASSERT_EQ(results.size(), requests.size());
      for (const SequenceResult& result : results)
        EXPECT_EQ(result.tokens, expected.at(result.sequence_index)) << "shape of " << parents.size() << " nodes";
      if (drafter == &oracle_drafter && shape.size() > 0) {
        EXPECT_GT(stats.accepted, 0);
      }
    }
  }
}

// The oracle's branch is the second sibling as often as the first: the kept path is not the
// first nodes of the tree, so its K/V must move right after the root's, and a row that took one
// branch must not see the other's.
TEST(TreeDecoder, KeepsTheBranchTheTargetTookWhereverItLies) {
  const std::vector<SequenceRequest> requests = mixed_requests(4, 78);
  const DecodeOptions options = greedy_options(0, 20);
  const TreeShape shape({-1, -1, 0, 0, 1, 1, 2, 3, 4, 5});
  OracleTreeDrafter drafter(oracle_continuations(requests, options, 8));
  DecodeStats stats;
  const std::vector<SequenceResult> results = tree_generate(models().target, drafter, shape, requests, options, &stats);
  const auto expected = oracle_continuations(requests, options);
  for (const SequenceResult& result : results) EXPECT_EQ(result.tokens, expected.at(result.sequence_index));
  EXPECT_GT(stats.accepted, stats.rounds) << "more than one node kept per round, on average";
}

// A row cancelled mid-decode leaves; the others, re-padded, end as the oracle's.
TEST(TreeDecoder, ACancelledRowLeavesAndTheOthersGoOnAsAlone) {
  const std::vector<SequenceRequest> requests = mixed_requests(3, 79);
  const DecodeOptions options = greedy_options(0, 18);
  OracleTreeDrafter drafter(oracle_continuations(requests, options, 8));
  TreeDecoder decoder(models().target, drafter, TreeShape({-1, -1, 0, 1}), options, 3);
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
TEST(TreeDecoder, EveryGreedyTreeFaultIsCaught) {
  const std::vector<SequenceRequest> requests = mixed_requests(4, 78);
  const DecodeOptions options = greedy_options(0, 20);
  const TreeShape shape({-1, -1, 0, 0, 1, 1, 2, 3, 4, 5});
  const auto expected = oracle_continuations(requests, options);
  for (const Fault fault : all_faults()) {
    if (!is_tree_only(fault) || is_sampling_only(fault)) continue;
    SCOPED_TRACE(std::string(fault_name(fault)));
    DecodeOptions faulty = options;
    faulty.faults.add(fault);
    OracleTreeDrafter drafter(oracle_continuations(requests, options, 8));
    bool caught = false;
    try {
      for (const SequenceResult& result : tree_generate(models().target, drafter, shape, requests, faulty))
        caught = caught || result.tokens != expected.at(result.sequence_index);
    } catch (const InvariantViolation&) {
      caught = true;
    }
    EXPECT_TRUE(caught);
  }
}

// Sampled and greedy rows share the rounds: each sampled row draws what it draws alone, from its
// own stream, and each greedy row is the oracle's, the invariants held every round.
TEST(TreeDecoder, SampledRowsDecodeAsAloneBesideGreedyOnes) {
  std::vector<SequenceRequest> requests = mixed_requests(5, 91);
  for (size_t i = 0; i < requests.size(); i += 2) requests[i].sampling = SamplingParams{.temperature = 0.9, .top_k = 5, .seed = 17};
  DecodeOptions options = greedy_options(0, 14);
  options.check_invariants = true;
  const TreeShape shape({-1, -1, 0, 0, 1, 2});
  ModelTreeDrafter drafter(models().near_target);
  const auto together = by_sequence(tree_generate(models().target, drafter, shape, requests, options));
  const auto greedy = oracle_continuations(requests, options);
  int64_t differing = 0;
  for (const SequenceRequest& request : requests) {
    const std::vector<int64_t>& tokens = together.at(request.sequence_index);
    if (!request.sampling) {
      EXPECT_EQ(tokens, greedy.at(request.sequence_index));
      continue;
    }
    const auto alone = tree_generate(models().target, drafter, shape, std::span(&request, 1), options);
    EXPECT_EQ(tokens, alone.front().tokens) << "sequence " << request.sequence_index;
    differing += tokens != greedy.at(request.sequence_index);
  }
  EXPECT_GT(differing, 0);
}

}  // namespace
}  // namespace specgate
