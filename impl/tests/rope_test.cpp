#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "impl/model/rope.h"

namespace specgate {
namespace {

// "Rotate half" in libtorch's operators: x * cos + cat(x2, x1) * signed_sin.
at::Tensor rotated_in_operators(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& signed_sin) {
  const int64_t half = x.size(-1) / 2;
  return x * cos + at::cat({x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1) * signed_sin;
}

ModelConfig rope_config(int64_t head_dim) {
  ModelConfig config;
  config.head_dim = head_dim;
  config.rope_theta = 10000.0;
  return config;
}

// The loop rounds each product and then their sum, as the operators do: the same bits.
TEST(RotaryEmbedding, TheLoopGivesTheOperatorsBits) {
  at::manual_seed(3);
  for (const at::ScalarType dtype : {at::kDouble, at::kFloat}) {
    for (const int64_t head_dim : {2, 16, 64}) {
      const RotaryEmbedding rope(rope_config(head_dim), at::TensorOptions().dtype(dtype));
      const at::Tensor positions = at::randint(0, 4000, {2, 5}, at::kLong);
      const auto [cos, signed_sin] = rope.cos_sin(positions);
      ASSERT_EQ(cos.sizes(), (std::vector<int64_t>{2, 5, 1, head_dim}));
      const at::Tensor x = at::randn({2, 5, 3, head_dim}, dtype);
      EXPECT_TRUE(at::equal(RotaryEmbedding::apply(x, cos, signed_sin), rotated_in_operators(x, cos, signed_sin)))
          << at::toString(dtype) << ", head_dim " << head_dim;
    }
  }
}

TEST(RotaryEmbedding, ViewsGradientsAndHalfPrecisionsGoToTheOperators) {
  at::manual_seed(4);
  const RotaryEmbedding rope(rope_config(8), at::TensorOptions().dtype(at::kFloat));
  const auto [cos, signed_sin] = rope.cos_sin(at::arange(4, at::kLong).view({1, 4}));
  const at::Tensor x = at::randn({1, 3, 4, 8}).transpose(1, 2);  // [B, T, H, D] through strides
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TRUE(at::equal(RotaryEmbedding::apply(x, cos, signed_sin), rotated_in_operators(x, cos, signed_sin)));
  const at::Tensor trained = at::randn({1, 4, 3, 8}).requires_grad_(true);
  EXPECT_TRUE(RotaryEmbedding::apply(trained, cos, signed_sin).requires_grad());
}

}  // namespace
}  // namespace specgate
