#include <cmath>
#include <iostream>

#include <gtest/gtest.h>

#include "property_tests/properties/case_models.h"
#include "property_tests/properties/sampling_distribution.h"

namespace specgate::props {
namespace {

TEST(SamplingDistribution, ExactDistributionSumsToOneOverCompleteOutputs) {
  for (const DistributionScenario& s : distribution_panel()) {
    const Transformer target = build_target(s.target);
    for (const auto& prompt : s.prompts) {
      double total = 0.0;
      for (const auto& [output, probability] : exact_output_distribution(target, prompt, s.max_new_tokens, s.sampling, s.eos_ids)) {
        total += probability;
        const bool ends_at_eos = !s.eos_ids.empty() && output.back() == s.eos_ids.front();
        EXPECT_TRUE(static_cast<int64_t>(output.size()) == s.max_new_tokens || ends_at_eos) << s.name;
        if (s.sampling.top_k > 0) {
          EXPECT_GT(probability, 0.0);
        }
      }
      EXPECT_NEAR(total, 1.0, 1e-12) << s.name;
    }
  }
}

// The fixed-seed panel CI runs: EQSPEC and EXSPEC, batches of more than one row mixing prompt
// lengths, each accepted at level kDistributionAlpha. (The sampling mutants' rejection is
// `conformance mutants`; rates over many seeds are `conformance mutants --sampling-calibration`.)
TEST(SamplingDistribution, CorrectDecodersMatchTheExactDistribution) {
  for (const DistributionScenario& s : distribution_panel()) {
    const DistributionTestResult verdict = distribution_test(s, FaultSet{});
    std::cout << "[" << s.name << "] chi-square " << verdict.fit.statistic << " on " << verdict.fit.degrees_of_freedom
              << " df, p = " << verdict.fit.p_value << ", " << verdict.fit.samples << " samples\n";
    EXPECT_EQ(verdict.fit.outside_support, 0) << s.name;
    EXPECT_FALSE(verdict.rejected) << s.name << ": p = " << verdict.fit.p_value;
  }
}

}  // namespace
}  // namespace specgate::props
