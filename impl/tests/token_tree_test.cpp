#include "impl/decoding/token_tree.h"

#include <gtest/gtest.h>

#include "impl/common/error.h"

namespace specgate {
namespace {

// Offset q sees offset k exactly when k is q, the root, or on q's path, whatever the shape.
void expect_visibility_of_paths(const TreeShape& shape) {
  const at::Tensor visible = shape.visibility();
  ASSERT_EQ(visible.size(0), shape.size() + 1);
  for (int64_t node = -1; node < shape.size(); ++node) {
    std::vector<bool> expected(shape.size() + 1, false);
    expected[0] = true;
    if (node >= 0) {
      for (const int64_t on_path : shape.path_to(node)) expected[on_path + 1] = true;
    }
    for (int64_t k = 0; k <= shape.size(); ++k)
      EXPECT_EQ(visible[node + 1][k].item<bool>(), expected[k]) << "offset " << node + 1 << " key " << k;
  }
}

TEST(TreeShape, DegenerateShapesSeeTheirPathsAndKnowTheirDepths) {
  const TreeShape chain({-1, 0, 1, 2});
  expect_visibility_of_paths(chain);
  EXPECT_EQ(chain.depth_offsets(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  const TreeShape star({-1, -1, -1, -1, -1});
  expect_visibility_of_paths(star);
  EXPECT_EQ(star.max_depth(), 1);
  EXPECT_EQ(star.rank(3), 3);
  const TreeShape one({-1});
  expect_visibility_of_paths(one);
  // EAGLE-2's shape of a root with two children, the first with three, the second with one.
  const TreeShape wide({-1, -1, 0, 0, 0, 1, 2});
  expect_visibility_of_paths(wide);
  EXPECT_EQ(wide.children(0), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(wide.path_to(6), (std::vector<int64_t>{0, 2, 6}));
  EXPECT_EQ(wide.depth_offsets(), (std::vector<int64_t>{0, 1, 1, 2, 2, 2, 2, 3}));
  expect_visibility_of_paths(TreeShape({}));
}

// Medusa's and EAGLE's configurations: paths of ranks, a rank skipped where the draft's choice is.
TEST(TreeShape, ReadsTreeChoicesAsTheirPathsOfRanks) {
  const TreeShape shape = TreeShape::from_choices({{0}, {1}, {0, 0}, {0, 2}, {1, 0}, {0, 2, 0}});
  EXPECT_EQ(shape.parent(3), 0);
  EXPECT_EQ(shape.rank(3), 2) << "the draft's third choice, though the second child";
  EXPECT_EQ(shape.path_to(5), (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(shape.depth(5), 3);
  EXPECT_THROW(TreeShape::from_choices({{0}, {1, 0, 0}}), InputError);
  EXPECT_THROW(TreeShape::from_choices({{0}, {}}), InputError);
  EXPECT_THROW(TreeShape::from_choices({{0}, {0}}), InputError);  // a sibling's rank
}

TEST(TreeShape, RefusesAParentThatIsNotAnEarlierNode) {
  EXPECT_THROW(TreeShape({-1, 1}), InputError);
  EXPECT_THROW(TreeShape({-2}), InputError);
  try {
    TreeShape({-1, 0, 5});
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "tree: node 2's parent 5 is neither -1 (the root) nor an earlier node");
  }
}

}  // namespace
}  // namespace specgate
