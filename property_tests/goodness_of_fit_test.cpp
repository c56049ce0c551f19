#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "property_tests/properties/goodness_of_fit.h"

namespace specgate::props {
namespace {

TEST(GoodnessOfFit, ChiSquareSurvivalMatchesTables) {
  // Critical values from standard tables: P(X >= c) for df degrees of freedom.
  EXPECT_NEAR(chi_square_survival(3.841459, 1), 0.05, 1e-6);
  EXPECT_NEAR(chi_square_survival(5.991465, 2), 0.05, 1e-6);
  EXPECT_NEAR(chi_square_survival(27.877165, 9), 1e-3, 1e-8);
  EXPECT_NEAR(chi_square_survival(124.342113, 100), 0.05, 1e-6);
  EXPECT_NEAR(chi_square_survival(2.0, 2), std::exp(-1.0), 1e-12);
  EXPECT_NEAR(chi_square_survival(0.5, 40), 1.0, 1e-12);
  EXPECT_EQ(chi_square_survival(0.0, 3), 1.0);
}

TEST(GoodnessOfFit, PoolsSparseCellsAndFlagsOutcomesOutsideTheSupport) {
  const std::map<Outcome, double> reference = {{{0}, 0.5}, {{1}, 0.49}, {{2}, 0.005}, {{3}, 0.005}};
  std::map<Outcome, int64_t> counts = {{{0}, 500}, {{1}, 490}, {{2}, 5}, {{3}, 5}};
  GoodnessOfFit fit = pearson_test(reference, counts);
  EXPECT_EQ(fit.cells, 3);  // {2} and {3} pooled: expected 10
  EXPECT_EQ(fit.degrees_of_freedom, 2);
  EXPECT_NEAR(fit.statistic, 0.0, 1e-12);
  EXPECT_NEAR(fit.p_value, 1.0, 1e-12);

  counts[{4}] = 1;
  fit = pearson_test(reference, counts);
  EXPECT_EQ(fit.outside_support, 1);
  EXPECT_EQ(fit.p_value, 0.0);
}

// The test's size: samples drawn from the reference itself are rejected at level 0.01 about
// 1% of the time.
TEST(GoodnessOfFit, RejectsTrueSamplesAtAboutItsLevel) {
  const std::map<Outcome, double> reference = {{{0}, 0.4}, {{1}, 0.3}, {{2}, 0.2}, {{3}, 0.07}, {{4}, 0.03}};
  std::mt19937_64 rng(3);
  std::discrete_distribution<int64_t> draw({0.4, 0.3, 0.2, 0.07, 0.03});
  int rejected = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::map<Outcome, int64_t> counts;
    for (int i = 0; i < 500; ++i) ++counts[{draw(rng)}];
    rejected += pearson_test(reference, counts).p_value < 0.01;
  }
  EXPECT_GT(rejected, 5);   // 20 expected; a binomial(2000, 0.01) stays in (5, 40) with
  EXPECT_LT(rejected, 40);  // probability 1 - 1e-5
}

}  // namespace
}  // namespace specgate::props
