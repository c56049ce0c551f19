#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include "impl/sampling/sampling.h"
#include "impl/scoring/support_band.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {
namespace {

using test_support::kDouble;

// Which tokens of one row of logits lie within the margin.
std::vector<bool> within_logits(const std::vector<double>& logits, const SamplingParams& sampling, SupportMargin margin) {
  const at::Tensor row = at::tensor(logits, kDouble).unsqueeze(0);
  const at::Tensor band = within_support_margin(row, sampling_distribution(row, sampling), sampling, margin).squeeze(0);
  std::vector<bool> out;
  for (int64_t i = 0; i < band.size(0); ++i) out.push_back(band[i].item<bool>());
  return out;
}

// The same with logits log(probabilities).
std::vector<bool> within(const std::vector<double>& probabilities, const SamplingParams& sampling, SupportMargin margin) {
  std::vector<double> logits;
  for (const double p : probabilities) logits.push_back(std::log(p));
  return within_logits(logits, sampling, margin);
}

// Top-p ignored draws from the whole tail. Mass ahead of each token: 0, 0.5, 0.8, 0.9, 0.95,
// 0.98; top-p 0.85 keeps three. A mass margin of 0.07 takes in the fourth (0.9 < 0.92), never the
// tail beyond it, which raising the tail's logits together by any margin would take in whole.
TEST(SupportBand, TopPMarginIsOnTheMassAheadNotAShiftOfTheTail) {
  const std::vector<double> p = {0.5, 0.3, 0.1, 0.05, 0.03, 0.02};
  const SamplingParams sampling{.temperature = 1.0, .top_p = 0.85};
  EXPECT_EQ(within(p, sampling, {.logits = 4.0, .mass = 0.07}), (std::vector<bool>{false, false, false, true, false, false}));
  EXPECT_EQ(within(p, sampling, {.logits = 4.0, .mass = 0.0}), (std::vector<bool>(6, false)));
}

// The mass ahead is that of the tempered distribution. At temperature 0.5, proportional to p^2:
// ahead 0, 0.645, 0.897, 0.987, 0.997; untempered it would be 0, 0.457, 0.743, 0.914, 0.971, and
// the margin would take in the fourth token too.
TEST(SupportBand, TopPMassIsTheTemperedOne) {
  const std::vector<double> p = {0.8, 0.5, 0.3, 0.1, 0.05};
  const SamplingParams sampling{.temperature = 0.5, .top_p = 0.7};
  EXPECT_EQ(within(p, sampling, {.logits = 0.0, .mass = 0.25}), (std::vector<bool>{false, false, true, false, false}));
}

// Top-k off by one draws the (k+1)-th token: within the margin when its logit lies within the
// margin of the k-th's, and only then; a token further down stays outside.
TEST(SupportBand, TopKMarginRaisesTheTokenAloneAgainstTheKth) {
  EXPECT_EQ(within_logits({5.0, 4.0, 3.0, 2.9, 0.0}, {.temperature = 0.7, .top_k = 3}, {.logits = 0.2}),
            (std::vector<bool>{false, false, false, true, false}));
}

// Min-p keeps tokens with l >= l_max + T log(min_p): at T 1 and min-p 0.1 the cut is at -2.303.
TEST(SupportBand, MinPMarginIsOnTheLogitAgainstTheThreshold) {
  const std::vector<double> logits = {0.0, -1.0, -2.5, -5.0};
  EXPECT_EQ(within_logits(logits, {.temperature = 1.0, .min_p = 0.1}, {.logits = 0.3}),
            (std::vector<bool>{false, false, true, false}));
  // At temperature 2 the threshold is l_max + 2 log(0.1) = -4.6: -5 within 0.5 of it.
  EXPECT_EQ(within_logits(logits, {.temperature = 2.0, .min_p = 0.1}, {.logits = 0.5}),
            (std::vector<bool>{false, false, false, true}));
}

// A token just past the top-k cut has the whole top-k mass ahead of it once it joins: top-p then
// takes it in only when that mass, over the mass with it, stays under top-p plus the margin.
TEST(SupportBand, ATokenPastTopKHasTheTopKMassAhead) {
  const std::vector<double> p = {0.4, 0.3, 0.2, 0.1};
  const SamplingParams sampling{.temperature = 1.0, .top_k = 3, .top_p = 0.95};
  // Top-k 3 keeps 0.9 of the mass; the fourth joining has 0.9 / 1.0 ahead: under 0.95.
  EXPECT_EQ(within(p, sampling, {.logits = std::log(2.0) + 1e-9, .mass = 0.0}), (std::vector<bool>{false, false, false, true}));
  const SamplingParams tight{.temperature = 1.0, .top_k = 3, .top_p = 0.85};
  EXPECT_EQ(within(p, tight, {.logits = 10.0, .mass = 0.0}), (std::vector<bool>(4, false)));
}

}  // namespace
}  // namespace specgate
