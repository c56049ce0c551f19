#include <cmath>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "impl/model/rms_norm.h"

namespace specgate {
namespace {

// RMSNorm as Hugging Face's Llama computes it, in libtorch's operators.
at::Tensor rms_norm_in_operators(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return weight * (x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps));
}

// Widths with and without a tail past the eight partial sums, a head's and the real model's.
constexpr int64_t kWidths[] = {1, 7, 8, 13, 64, 576};

TEST(RmsNorm, EqualsTheOperatorsWithinTheRoundingOfTheVariance) {
  at::manual_seed(0);
  for (const at::ScalarType dtype : {at::kDouble, at::kFloat}) {
    const double tolerance = dtype == at::kDouble ? 1e-14 : 1e-6;
    for (const int64_t width : kWidths) {
      const at::Tensor x = at::randn({2, 3, width}, dtype) * 3, weight = at::randn({width}, dtype);
      const at::Tensor ours = rms_norm(x, weight, 1e-6), reference = rms_norm_in_operators(x, weight, 1e-6);
      ASSERT_EQ(ours.sizes(), x.sizes());
      ASSERT_EQ(ours.scalar_type(), dtype);
      EXPECT_LT(((ours - reference).abs() / (reference.abs() + tolerance)).max().item<double>(), 8 * tolerance)
          << at::toString(dtype) << ", width " << width;
    }
  }
}

TEST(RmsNorm, EpsilonKeepsAZeroRowFinite) {
  const at::Tensor zeros = at::zeros({1, 8}, at::kDouble), weight = at::ones({8}, at::kDouble);
  EXPECT_TRUE(at::equal(rms_norm(zeros, weight, 1e-6), zeros));
  const at::Tensor x = at::full({1, 4}, 1e-4, at::kDouble);
  EXPECT_NEAR(rms_norm(x, at::ones({4}, at::kDouble), 1e-6)[0][0].item<double>(), 1e-4 / std::sqrt(1e-8 + 1e-6), 1e-12);
}

// A row normalised among any others is the same bits as alone: the batch a row is decoded in
// cannot move its tokens.
TEST(RmsNorm, ARowsResultIsTheSameWhateverRowsComeWithIt) {
  at::manual_seed(1);
  for (const at::ScalarType dtype : {at::kDouble, at::kFloat}) {
    const at::Tensor x = at::randn({9, 576}, dtype), weight = at::randn({576}, dtype);
    const at::Tensor all = rms_norm(x, weight, 1e-5);
    for (int64_t row = 0; row < x.size(0); ++row) {
      EXPECT_TRUE(at::equal(rms_norm(x.narrow(0, row, 1), weight, 1e-5), all.narrow(0, row, 1))) << "row " << row;
    }
  }
}

// Training needs the operators' gradients; half precisions normalise in float32; a strided view
// is read through its strides.
TEST(RmsNorm, GradientsHalfPrecisionsAndViewsGoToTheOperators) {
  at::manual_seed(2);
  const at::Tensor weight = at::randn({16}).requires_grad_(true);
  const at::Tensor x = at::randn({3, 16});
  const at::Tensor trained = rms_norm(x, weight, 1e-6);
  ASSERT_TRUE(trained.requires_grad());
  trained.sum().backward();
  EXPECT_TRUE(weight.grad().defined());

  const at::Tensor half = at::randn({3, 16}).to(at::kBFloat16), half_weight = at::randn({16}).to(at::kBFloat16);
  const at::Tensor in_float = rms_norm_in_operators(half.to(at::kFloat), at::ones({16}), 1e-6).to(at::kBFloat16);
  EXPECT_TRUE(at::equal(rms_norm(half, half_weight, 1e-6), half_weight * in_float));

  const at::Tensor wide = at::randn({16, 3}, at::kDouble), plain_weight = at::randn({16}, at::kDouble);
  const at::Tensor view = wide.t();
  ASSERT_FALSE(view.is_contiguous());
  EXPECT_TRUE(at::allclose(rms_norm(view, plain_weight, 1e-6), rms_norm(view.contiguous(), plain_weight, 1e-6)));
}

}  // namespace
}  // namespace specgate
