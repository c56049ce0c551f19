#include "impl/decoding/tree_drafter.h"

#include <memory>

#include <gtest/gtest.h>

#include "impl/decoding/eqspec.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using namespace specgate::test_support;

// Every round, what the drafter under test proposes from its caches, warmed over the rounds
// before, next to what a new drafter of the same policy proposes, feeding each row's content
// whole.
class WarmAgainstFresh final : public TreeDrafter {
 public:
  explicit WarmAgainstFresh(TreePolicy policy)
      : policy_(std::move(policy)), warm_(make_model_tree_drafter(models().near_target, policy_)) {}

  DraftTrees propose(const BatchState& state) override {
    DraftTrees warm = warm_->propose(state);
    const DraftTrees fresh = make_model_tree_drafter(models().near_target, policy_)->propose(state);
    EXPECT_TRUE(warm.tokens.equal(fresh.tokens)) << "round " << rounds;
    for (size_t row = 0; row < warm.shapes.size(); ++row)
      EXPECT_EQ(warm.shapes[row].visibility().equal(fresh.shapes[row].visibility()), true) << "round " << rounds;
    ++rounds;
    return warm;
  }
  int64_t max_nodes() const override { return warm_->max_nodes(); }

  int64_t rounds = 0;

 private:
  TreePolicy policy_;
  std::unique_ptr<TreeDrafter> warm_;
};

// A row's content cache keeps its K/V across rounds, as rows gain tokens, leave and are
// re-padded: its proposals are those of a drafter that feeds the content whole, for a static
// shape and for EAGLE-2's dynamic trees.
TEST(TreeDrafter, CachedProposalsEqualAFreshDrafters) {
  const std::vector<SequenceRequest> requests = mixed_requests(5, 84);
  const DecodeOptions options = greedy_options(0, 16);
  for (const TreePolicy& policy : {TreePolicy(TreeShape({-1, -1, 0, 1, 1, 2})), TreePolicy(TopkTree{.topk = 3, .depth = 3, .nodes = 6})}) {
    WarmAgainstFresh drafter(policy);
    tree_generate(models().target, drafter, requests, options);
    EXPECT_GT(drafter.rounds, 5);
  }
}

// A chain-shaped tree of rank-0 nodes drafts what the draft model decodes greedily alone.
TEST(TreeDrafter, AChainOfFirstChoicesIsTheDraftsGreedyContinuation) {
  const std::vector<SequenceRequest> requests = mixed_requests(4, 85);
  const DecodeOptions options = greedy_options(0, 8);
  BatchState state;
  for (const SequenceRequest& request : requests) state.rows.emplace_back(request, options);
  const std::unique_ptr<TreeDrafter> drafter = make_model_tree_drafter(models().near_target, TreeShape({-1, 0, 1, 2}));
  const DraftTrees trees = drafter->propose(state);
  for (size_t row = 0; row < requests.size(); ++row) {
    const OracleOptions alone{.max_new_tokens = 4, .top_logprobs = 0};
    const std::vector<int64_t> expected = oracle_generate(models().near_target, requests[row].prompt, alone, 0).tokens;
    const at::Tensor drafted = trees.tokens[static_cast<int64_t>(row)];
    EXPECT_EQ(std::vector<int64_t>(drafted.data_ptr<int64_t>(), drafted.data_ptr<int64_t>() + 4), expected);
  }
}

}  // namespace
}  // namespace specgate
