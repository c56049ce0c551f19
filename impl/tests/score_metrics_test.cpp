#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impl/common/utf8.h"
#include "impl/scoring/attribution.h"
#include "impl/scoring/metrics.h"

namespace specgate {
namespace {

std::vector<int64_t> code_points_of(const std::string& text) {
  std::vector<int64_t> out;
  EXPECT_EQ(decode_utf8(text, out), std::nullopt) << text;
  return out;
}

TEST(CompareAnswers, IdenticalAnswersAreExact) {
  const Comparison c = compare_answers({{5, 6, 7}}, {{5, 6, 7}});
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.lcp, 3);
  EXPECT_EQ(c.reference_length, 3);
  EXPECT_EQ(c.candidate_length, 3);
  EXPECT_DOUBLE_EQ(c.partial, 1.0);
  EXPECT_FALSE(c.divergence.has_value());
}

TEST(CompareAnswers, BothEmptyIsExactWithPartialOne) {
  const Comparison c = compare_answers({{}}, {{}});
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.lcp, 0);
  EXPECT_DOUBLE_EQ(c.partial, 1.0);
}

TEST(CompareAnswers, EmptyReferenceAgainstAnAnswerScoresZero) {
  const Comparison c = compare_answers({{}}, {{9, 9}});
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.lcp, 0);
  EXPECT_DOUBLE_EQ(c.partial, 0.0);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->index, 0);
  EXPECT_EQ(c.divergence->reference_symbol, std::nullopt);
  EXPECT_EQ(c.divergence->candidate_symbol, 9);
}

TEST(CompareAnswers, EmptyCandidateDivergesAtZero) {
  const Comparison c = compare_answers({{1, 2, 3, 4}}, {{}});
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.lcp, 0);
  EXPECT_EQ(c.candidate_length, 0);
  EXPECT_DOUBLE_EQ(c.partial, 0.0);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->index, 0);
  EXPECT_EQ(c.divergence->reference_symbol, 1);
  EXPECT_EQ(c.divergence->candidate_symbol, std::nullopt);
}

TEST(CompareAnswers, DivergenceAtTheFirstSymbol) {
  const Comparison c = compare_answers({{1, 2, 3, 4}}, {{8, 2, 3, 4}});
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.lcp, 0);
  EXPECT_DOUBLE_EQ(c.partial, 0.0);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->index, 0);
  EXPECT_EQ(c.divergence->reference_symbol, 1);
  EXPECT_EQ(c.divergence->candidate_symbol, 8);
}

TEST(CompareAnswers, DivergenceInTheMiddle) {
  const Comparison c = compare_answers({{1, 2, 3, 4}}, {{1, 2, 7, 4}});
  EXPECT_EQ(c.lcp, 2);
  EXPECT_DOUBLE_EQ(c.partial, 0.5);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->index, 2);
  EXPECT_EQ(c.divergence->index_in_turn, 2);
  EXPECT_EQ(c.divergence->reference_symbol, 3);
  EXPECT_EQ(c.divergence->candidate_symbol, 7);
}

TEST(CompareAnswers, LongerCandidateHasFullPartialButIsNotExact) {
  const Comparison c = compare_answers({{1, 2, 3}}, {{1, 2, 3, 4, 5}});
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.lcp, 3);
  EXPECT_EQ(c.candidate_length, 5);
  EXPECT_DOUBLE_EQ(c.partial, 1.0);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->index, 3);
  EXPECT_EQ(c.divergence->reference_symbol, std::nullopt);
  EXPECT_EQ(c.divergence->candidate_symbol, 4);
}

TEST(CompareAnswers, ShorterCandidateIsAPrefix) {
  const Comparison c = compare_answers({{1, 2, 3, 4}}, {{1, 2, 3}});
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.lcp, 3);
  EXPECT_DOUBLE_EQ(c.partial, 0.75);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->index, 3);
  EXPECT_EQ(c.divergence->reference_symbol, 4);
  EXPECT_EQ(c.divergence->candidate_symbol, std::nullopt);
}

TEST(CompareAnswers, TurnsAreComparedOneByOneAndIndexedAcrossAll) {
  const Comparison c = compare_answers({{1, 2}, {3, 4, 5}}, {{1, 2}, {3, 9, 5}});
  EXPECT_EQ(c.reference_length, 5);
  EXPECT_EQ(c.lcp, 3);
  EXPECT_DOUBLE_EQ(c.partial, 0.6);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->index, 3);
  EXPECT_EQ(c.divergence->turn, 1);
  EXPECT_EQ(c.divergence->index_in_turn, 1);
  EXPECT_EQ(c.divergence->reference_symbol, 4);
  EXPECT_EQ(c.divergence->candidate_symbol, 9);
}

TEST(CompareAnswers, SymbolsNeverMatchAcrossATurnBoundary) {
  // The concatenations are equal ([1, 2, 3]) but turn 0 is not.
  const Comparison c = compare_answers({{1, 2}, {3}}, {{1}, {2, 3}});
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.lcp, 1);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->turn, 0);
  EXPECT_EQ(c.divergence->reference_symbol, 2);
  EXPECT_EQ(c.divergence->candidate_symbol, std::nullopt);
}

TEST(CompareAnswers, AMissingTurnIsADivergence) {
  const Comparison c = compare_answers({{1, 2}, {3}}, {{1, 2}});
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.lcp, 2);
  EXPECT_NEAR(c.partial, 2.0 / 3.0, 1e-12);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->turn, 1);
  EXPECT_EQ(c.divergence->index, 2);
  EXPECT_EQ(c.divergence->reference_symbol, 3);
  EXPECT_EQ(c.divergence->candidate_symbol, std::nullopt);
}

TEST(CompareAnswers, UnicodeTextIsComparedInCodePoints) {
  // "naïve 😀" against "naive 😀": 7 code points each, which differ at index 2 although the
  // UTF-8 bytes differ in length.
  const std::vector<int64_t> reference = code_points_of("na\xC3\xAFve \xF0\x9F\x98\x80");
  const std::vector<int64_t> candidate = code_points_of("naive \xF0\x9F\x98\x80");
  ASSERT_EQ(reference.size(), 7u);
  EXPECT_EQ(reference.back(), 0x1F600);
  const Comparison c = compare_answers({reference}, {candidate});
  EXPECT_EQ(c.reference_length, 7);
  EXPECT_EQ(c.lcp, 2);
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->reference_symbol, 0xEF);
  EXPECT_EQ(c.divergence->candidate_symbol, 'i');
  EXPECT_TRUE(compare_answers({code_points_of("\xE6\x97\xA5\xE6\x9C\xAC")}, {code_points_of("\xE6\x97\xA5\xE6\x9C\xAC")}).exact);
}

TEST(Utf8, DecodesEveryLengthAndRejectsInvalidSequences) {
  std::vector<int64_t> out;
  EXPECT_EQ(decode_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", out), std::nullopt);
  EXPECT_EQ(out, (std::vector<int64_t>{'a', 0xE9, 0x20AC, 0x1F600}));
  out.clear();
  EXPECT_EQ(decode_utf8("ab\xC3", out), 2u);  // truncated
  EXPECT_EQ(out, (std::vector<int64_t>{'a', 'b'}));
  EXPECT_EQ(find_invalid_utf8("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(find_invalid_utf8("x\xED\xA0\x80"), 1u);     // a surrogate
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("\x80"), 0u);              // a lone continuation byte
  std::string text;
  for (int64_t code_point : {0x41, 0xE9, 0x20AC, 0x1F600}) append_utf8(code_point, text);
  EXPECT_EQ(text, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST(Attribution, ClassifiesTheMarginAgainstTheThreshold) {
  EXPECT_EQ(classify_margin(0.05, 0.1), Attribution::kNearTie);
  EXPECT_EQ(classify_margin(0.1, 0.1), Attribution::kNearTie);
  EXPECT_EQ(classify_margin(-0.05, 0.1), Attribution::kNearTie);
  EXPECT_EQ(classify_margin(0.1001, 0.1), Attribution::kHard);
  EXPECT_EQ(classify_margin(-2.0, 0.1), Attribution::kHard);
  EXPECT_EQ(classify_margin(0.0, 0.0), Attribution::kNearTie);
}

TEST(Attribution, UsesRecordedLogprobsWhenBothTokensAreThere) {
  const std::vector<TokenLogprob> recorded = {{10, -0.50}, {11, -0.55}, {12, -3.0}};
  const AttributionResult near = attribute_divergence(10, 11, &recorded, {}, 0.1);
  EXPECT_EQ(near.kind, Attribution::kNearTie);
  EXPECT_EQ(near.source, MarginSource::kTopLogprobs);
  ASSERT_TRUE(near.margin.has_value());
  EXPECT_NEAR(*near.margin, 0.05, 1e-12);
  EXPECT_EQ(near.reference_logprob, -0.50);
  EXPECT_EQ(near.candidate_logprob, -0.55);
  const AttributionResult hard = attribute_divergence(10, 12, &recorded, {}, 0.1);
  EXPECT_EQ(hard.kind, Attribution::kHard);
  EXPECT_NEAR(*hard.margin, 2.5, 1e-12);
  EXPECT_FALSE(hard.margin_is_lower_bound);
}

TEST(Attribution, BoundsTheMarginWhenTheCandidateTokenWasNotRecorded) {
  const std::vector<TokenLogprob> recorded = {{10, -0.1}, {12, -4.0}};
  const AttributionResult bound = attribute_divergence(10, 99, &recorded, {}, 0.1);
  EXPECT_EQ(bound.kind, Attribution::kHard);
  EXPECT_EQ(bound.source, MarginSource::kTopLogprobsBound);
  EXPECT_TRUE(bound.margin_is_lower_bound);
  EXPECT_NEAR(*bound.margin, 3.9, 1e-12);
  EXPECT_EQ(bound.candidate_logprob, std::nullopt);

  const std::vector<TokenLogprob> close = {{10, -0.70}, {12, -0.75}};
  const AttributionResult unknown = attribute_divergence(10, 99, &close, {}, 0.1);
  EXPECT_EQ(unknown.kind, Attribution::kUnattributed);
  EXPECT_NE(unknown.note.find(">= 0.05 nats"), std::string::npos) << unknown.note;
  EXPECT_NE(unknown.note.find("no --rescore-with"), std::string::npos) << unknown.note;
}

TEST(Attribution, ReScoresWhatTheRecordedLogprobsCannotDecide) {
  int calls = 0;
  const Rescore rescore = [&calls](std::string&) -> std::optional<RescoredLogprobs> {
    ++calls;
    return RescoredLogprobs{-0.2, -1.7};
  };
  const std::vector<TokenLogprob> recorded = {{10, -0.2}};
  const AttributionResult result = attribute_divergence(10, 11, &recorded, rescore, 0.1);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(result.kind, Attribution::kHard);
  EXPECT_EQ(result.source, MarginSource::kRescore);
  EXPECT_NEAR(*result.margin, 1.5, 1e-12);

  const std::vector<TokenLogprob> both = {{10, -0.2}, {11, -0.25}};
  EXPECT_EQ(attribute_divergence(10, 11, &both, rescore, 0.1).source, MarginSource::kTopLogprobs);
  EXPECT_EQ(calls, 1) << "recorded log-probabilities of both tokens need no re-scoring";
}

TEST(Attribution, IsUnattributedWithoutAnySource) {
  const AttributionResult none = attribute_divergence(1, 2, nullptr, {}, 0.1);
  EXPECT_EQ(none.kind, Attribution::kUnattributed);
  EXPECT_EQ(none.margin, std::nullopt);
  EXPECT_EQ(none.note, "the reference answer has no top_logprobs; no --rescore-with");

  const Rescore refuses = [](std::string& why_not) -> std::optional<RescoredLogprobs> {
    why_not = "too long";
    return std::nullopt;
  };
  EXPECT_EQ(attribute_divergence(1, 2, nullptr, refuses, 0.1).note,
            "the reference answer has no top_logprobs; re-scoring: too long");
}

}  // namespace
}  // namespace specgate
