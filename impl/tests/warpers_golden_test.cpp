// Compares sampling_distribution() with the distributions transformers samples from
// (impl/tests/warpers_reference.py, run by ctest first): temperature, top-k, top-p and min-p,
// alone and together, on float64 logits.
#include <fstream>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/sampling/sampling.h"

namespace specgate {
namespace {

TEST(WarpersGolden, EveryCaseMatchesTransformers) {
  std::ifstream in(SPECGATE_WARPER_GOLDENS);
  ASSERT_TRUE(in) << SPECGATE_WARPER_GOLDENS;
  const nlohmann::json goldens = nlohmann::json::parse(in);
  const nlohmann::json& cases = goldens.at("cases");
  ASSERT_GT(cases.size(), 100u);
  int64_t min_p_changed_support = 0;
  for (const nlohmann::json& c : cases) {
    const SamplingParams params{.temperature = c["temperature"], .top_k = c["top_k"], .top_p = c["top_p"], .min_p = c["min_p"]};
    const auto logits = c["logits"].get<std::vector<double>>();
    const auto expected = c["probs"].get<std::vector<double>>();
    const at::Tensor probs = sampling_distribution(at::tensor(logits, at::kDouble), params);
    const at::Tensor without_min_p =
        sampling_distribution(at::tensor(logits, at::kDouble), {.temperature = params.temperature, .top_k = params.top_k, .top_p = params.top_p});
    if (!probs.gt(0).equal(without_min_p.gt(0))) ++min_p_changed_support;
    for (size_t i = 0; i < expected.size(); ++i) {
      const double got = probs[static_cast<int64_t>(i)].item<double>();
      EXPECT_EQ(got == 0.0, expected[i] == 0.0) << c.dump() << " token " << i;
      EXPECT_NEAR(got, expected[i], 1e-12) << describe(params) << " token " << i;
    }
  }
  EXPECT_GT(min_p_changed_support, 50) << "the cases should exercise min-p";
}

}  // namespace
}  // namespace specgate
