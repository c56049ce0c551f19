// Compares ngram_proposal() with the drafts transformers' prompt lookup proposes
// (impl/tests/ngram_reference.py, run by ctest first) on words of Spec-Bench questions and on
// random contexts, with and without an EOS id.
#include <fstream>
#include <optional>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/decoding/ngram_drafter.h"

namespace specgate {
namespace {

TEST(NgramGolden, EveryProposalMatchesTransformersPromptLookup) {
  std::ifstream in(SPECGATE_NGRAM_GOLDENS);
  ASSERT_TRUE(in) << SPECGATE_NGRAM_GOLDENS;
  const nlohmann::json goldens = nlohmann::json::parse(in);
  const nlohmann::json& cases = goldens.at("cases");
  ASSERT_GT(cases.size(), 1000u);
  int64_t proposed = 0, cut_at_eos = 0;
  for (const nlohmann::json& c : cases) {
    const auto context = c["context"].get<std::vector<int64_t>>();
    std::vector<int64_t> eos;
    if (!c["eos"].is_null()) eos.push_back(c["eos"].get<int64_t>());
    const auto expected = c["proposal"].get<std::vector<int64_t>>();
    const NgramOptions options{.min_n = 1, .max_n = c["max_n"].get<int64_t>()};
    EXPECT_EQ(ngram_proposal(context, c["k"].get<int64_t>(), options, eos), expected) << c.dump();
    proposed += !expected.empty();
    cut_at_eos += !eos.empty() && ngram_proposal(context, c["k"].get<int64_t>(), options).size() > expected.size();
  }
  EXPECT_GT(proposed, 500);
  EXPECT_GT(cut_at_eos, 10) << "the cases should exercise the cut at EOS";
}

}  // namespace
}  // namespace specgate
