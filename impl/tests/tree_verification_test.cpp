#include "impl/decoding/tree_verification.h"

#include <cmath>

#include <gtest/gtest.h>

namespace specgate {
namespace {

// Two siblings drafting the same token: the second is tested against a residual that no longer
// holds it, so it is never kept, and a bonus after both is never that token.
TEST(TreeVerification, ARepeatedSiblingIsNeverKeptNorItsTokenDrawnAfterRejection) {
  constexpr int64_t kRows = 400;
  DecodeOptions options;
  options.sampling = SamplingParams{.temperature = 1.0, .seed = 5};
  BatchState state;
  for (int64_t i = 0; i < kRows; ++i) state.rows.emplace_back(SequenceRequest{.sequence_index = i, .prompt = {1}}, options);
  const at::Tensor root = at::log(at::tensor({0.5, 0.3, 0.2, 0.0}, at::kDouble));
  const at::Tensor logits = at::stack({root, root, root}).unsqueeze(0).expand({kRows, 3, 4}).contiguous();
  const TreeShape star({-1, -1});
  const DraftTrees trees{.shapes = std::vector<TreeShape>(kRows, star), .tokens = at::zeros({kRows, 2}, at::kLong)};
  int64_t kept = 0;
  for (const TreeAcceptance& decided : verify_tree(logits, trees, state, options.faults)) {
    ASSERT_LE(decided.path.size(), 1U);
    if (decided.path.empty()) {
      EXPECT_NE(decided.bonus, 0);
      EXPECT_NE(decided.bonus, 3);  // outside the support
    } else {
      EXPECT_EQ(decided.path.front(), 0);
      ++kept;
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / kRows, 0.5, 4 * std::sqrt(0.25 / kRows));
}

}  // namespace
}  // namespace specgate
