#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>

#include <gtest/gtest.h>

#include "impl/common/error.h"
#include "impl/sampling/sampling.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {
namespace {

using test_support::kDouble;

TEST(Sampling, TemperatureScalesTheSoftmax) {
  const at::Tensor logits = at::tensor({1.0, 2.0, 3.0}, kDouble);
  const at::Tensor probs = sampling_distribution(logits, {.temperature = 2.0});
  EXPECT_TRUE(at::allclose(probs, (logits / 2.0).softmax(0)));
}

TEST(Sampling, TopKKeepsTheKMostLikely) {
  const at::Tensor probs = sampling_distribution(at::tensor({1.0, 4.0, 3.0, 2.0}, kDouble), {.temperature = 1.0, .top_k = 2});
  EXPECT_EQ(probs[0].item<double>(), 0.0);
  EXPECT_EQ(probs[3].item<double>(), 0.0);
  EXPECT_NEAR(probs[1].item<double>() + probs[2].item<double>(), 1.0, 1e-15);
}

TEST(Sampling, TopPKeepsTheSmallestSetReachingTheMass) {
  // Probabilities 0.5, 0.3, 0.15, 0.05: top_p 0.75 keeps the first two, 0.85 the first three.
  const at::Tensor logits = at::tensor({0.5, 0.3, 0.15, 0.05}, kDouble).log();
  const at::Tensor two = sampling_distribution(logits, {.temperature = 1.0, .top_p = 0.75});
  EXPECT_TRUE(at::allclose(two, at::tensor({0.625, 0.375, 0.0, 0.0}, kDouble)));
  const at::Tensor three = sampling_distribution(logits, {.temperature = 1.0, .top_p = 0.85});
  EXPECT_TRUE(at::allclose(three, at::tensor({0.5, 0.3, 0.15, 0.0}, kDouble) / 0.95));
  const at::Tensor one = sampling_distribution(logits, {.temperature = 1.0, .top_p = 0.01});
  EXPECT_TRUE(at::allclose(one, at::tensor({1.0, 0.0, 0.0, 0.0}, kDouble)));
}

// Where the top-p cut falls among tokens of equal probability, which of them are dropped must not
// depend on the sort: the sort is stable, so the lowest ids go first (they come first in the
// ascending order), in every row and every run.
TEST(Sampling, TopPDropsTiedTokensLowestIdFirst) {
  // 0.4 and 300 tokens of 0.002 each: top_p 0.7 keeps 0.4 and the 150 highest ids among the ties.
  std::vector<double> probabilities(301, 0.002);
  probabilities[0] = 0.4;
  const at::Tensor logits = at::tensor(probabilities, kDouble).log().unsqueeze(0).expand({4, 301}).contiguous();
  const at::Tensor kept = sampling_distribution(logits, {.temperature = 1.0, .top_p = 0.7}).gt(0.0);
  for (int64_t row = 0; row < 4; ++row) {
    EXPECT_TRUE(kept[row][0].item<bool>());
    const int64_t count = kept[row].sum().item<int64_t>() - 1;
    EXPECT_NEAR(static_cast<double>(count), 150.0, 1.0) << "row " << row;
    // Every kept tie has a higher id than every dropped one.
    EXPECT_TRUE(kept[row].narrow(0, 301 - count, count).all().item<bool>()) << "row " << row;
  }
}

TEST(Sampling, MinPKeepsTheTokensNearTheMostLikely) {
  // Probabilities 0.5, 0.3, 0.15, 0.05: min_p 0.2 cuts under 0.1, min_p 0.7 under 0.35.
  const at::Tensor logits = at::tensor({0.5, 0.3, 0.15, 0.05}, kDouble).log();
  const at::Tensor three = sampling_distribution(logits, {.temperature = 1.0, .min_p = 0.2});
  EXPECT_TRUE(at::allclose(three, at::tensor({0.5, 0.3, 0.15, 0.0}, kDouble) / 0.95));
  const at::Tensor one = sampling_distribution(logits, {.temperature = 1.0, .min_p = 0.7});
  EXPECT_TRUE(at::allclose(one, at::tensor({1.0, 0.0, 0.0, 0.0}, kDouble)));
  // After top-p 0.75 has kept 0.5 and 0.3, min_p 0.7 still measures against the most likely.
  const at::Tensor both = sampling_distribution(logits, {.temperature = 1.0, .top_p = 0.75, .min_p = 0.55});
  EXPECT_TRUE(at::allclose(both, at::tensor({0.625, 0.375, 0.0, 0.0}, kDouble)));
}

TEST(Sampling, SampleTokenFollowsTheDistribution) {
  const at::Tensor probs = at::tensor({0.2, 0.0, 0.8}, kDouble);
  SequenceRng rng(1, 0);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 20000; ++i) ++counts[sample_token(probs, rng)];
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(counts[0] / 20000.0, 0.2, 0.015);
}

TEST(Sampling, SequenceStreamsDependOnlyOnSeedAndIndex) {
  SequenceRng a(5, 3), b(5, 3), other_index(5, 4), other_seed(6, 3);
  const double first = a.uniform();
  EXPECT_EQ(first, b.uniform());
  EXPECT_NE(first, other_index.uniform());
  EXPECT_NE(first, other_seed.uniform());
}

TEST(Sampling, ValidateNamesTheFlag) {
  try {
    validate({.temperature = 1.0, .top_p = 1.5});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--top-p"), std::string::npos);
  }
  EXPECT_THROW(validate({.temperature = -1.0}), InputError);
  EXPECT_THROW(validate({.temperature = 1.0, .top_k = -2}), InputError);
  EXPECT_THROW(validate({.temperature = 1.0, .min_p = 1.5}), InputError);
  EXPECT_THROW(validate({.temperature = 1.0, .min_p = -0.1}), InputError);
  EXPECT_NO_THROW(validate({.temperature = 0.7, .top_k = 5, .top_p = 0.9}));
}

TEST(Sampling, EachRowsOwnWarpersGiveItTheDistributionItHasAlone) {
  const std::vector<SamplingParams> rows = {
      {},  // greedy: its distribution goes unused
      {.temperature = 0.7},
      {.temperature = 1.3, .top_k = 4},
      {.temperature = 1.0, .top_p = 0.8},
      {.temperature = 0.9, .top_k = 6, .top_p = 0.9, .min_p = 0.2},
      {.temperature = 1.3, .top_k = 40},  // top-k beyond the vocabulary: off
  };
  const at::Tensor logits = at::randn({6, 3, 12}, at::make_generator<at::CPUGeneratorImpl>(4), kDouble) * 3;
  const at::Tensor together = sampling_distribution(logits, rows);
  ASSERT_EQ(together.sizes(), logits.sizes());
  for (size_t i = 1; i < rows.size(); ++i) {
    const at::Tensor alone = sampling_distribution(logits.narrow(0, i, 1), rows[i]);
    EXPECT_TRUE(together.narrow(0, i, 1).equal(alone)) << "row " << i << ", " << describe(rows[i]);
  }
  EXPECT_TRUE(together[0].equal(sampling_distribution(logits[0], {.temperature = 1.0}))) << "greedy row";
}

TEST(Sampling, RowsThatShareTheirWarpersTakeTheOneSettingPath) {
  const at::Tensor logits = at::randn({3, 9}, at::make_generator<at::CPUGeneratorImpl>(5), kDouble);
  const SamplingParams shared{.temperature = 0.8, .top_k = 3, .seed = 1};
  const std::vector<SamplingParams> rows = {shared, {}, {.temperature = 0.8, .top_k = 3, .seed = 2}};
  EXPECT_TRUE(sampling_distribution(logits, rows).equal(sampling_distribution(logits, shared)));
  EXPECT_THROW(sampling_distribution(logits, std::vector<SamplingParams>(3)), c10::Error) << "no row samples";
}

}  // namespace
}  // namespace specgate
