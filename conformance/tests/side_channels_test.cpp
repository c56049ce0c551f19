// What a server reports besides its tokens, judged on hand-built turns: usage counts, missing,
// zeroed and misplaced log-probabilities, each token's figures against each other, and their
// parity between two schedules.
#include <gtest/gtest.h>

#include "conformance/differential/side_channels.h"

namespace specgate::cli {
namespace {

// Tokens 5, 6 with two alternatives each, the chosen one first.
ReportedTurn good_turn() {
  return {.prompt = {1, 2},
          .completion = {.token_ids = std::vector<int64_t>{5, 6},
                         .top_logprobs = {{{5, -0.1}, {9, -2.5}}, {{6, -0.2}, {8, -1.9}}},
                         .new_tokens = 2}};
}

std::vector<std::string> kinds(const SideChannelCheck& check) {
  std::vector<std::string> out;
  for (const SideChannelFinding& f : check.findings) out.push_back(f.kind);
  return out;
}

const SideChannelSettings kAsked{.top_logprobs = 2, .tolerance = 0.05};

TEST(SideChannels, ACorrectTurnHasNoFinding) {
  const SideChannelCheck check = check_side_channels({{{7, 0}, good_turn()}}, kAsked);
  EXPECT_EQ(check.turns, 1);
  EXPECT_EQ(check.rescored_turns, 0);
  EXPECT_TRUE(check.findings.empty());
}

TEST(SideChannels, AnswersGivenAsTextOnlyAreNotJudgedOnTokens) {
  ReportedTurn text_only = good_turn();
  text_only.completion.token_ids.reset();
  text_only.completion.new_tokens = 16;
  text_only.completion.finish_reason = "length";
  EXPECT_TRUE(check_side_channels({{{1, 0}, text_only}}, SideChannelSettings{.max_new_tokens = 16, .top_logprobs = 2}).findings.empty());
  ReportedTurns other = {{{1, 0}, text_only}};
  other[{1, 0}].completion.finish_reason = "stop";
  EXPECT_TRUE(compare_reports({{{1, 0}, text_only}}, other, true, 0.05).empty()) << "texts are not known to be the same tokens";
}

TEST(SideChannels, AUsageCountThatIsNotTheTokensIsAFinding) {
  ReportedTurn turn = good_turn();
  turn.completion.new_tokens = 5;
  const SideChannelCheck check = check_side_channels({{{7, 1}, turn}}, kAsked);
  ASSERT_EQ(kinds(check), std::vector<std::string>{"usage"});
  EXPECT_EQ(check.findings[0].question_id, 7);
  EXPECT_EQ(check.findings[0].turn, 1);
  EXPECT_EQ(check.findings[0].detail, "usage.completion_tokens is 5, the answer has 2 tokens");
  turn.completion.new_tokens.reset();
  EXPECT_TRUE(check_side_channels({{{7, 1}, turn}}, kAsked).findings.empty()) << "a server that gives no count";
}

TEST(SideChannels, AnIdPastTheModelsVocabularyIsAFindingWhereTheVocabularyIsKnown) {
  const SideChannelSettings known{.top_logprobs = 2, .vocabulary = 9, .tolerance = 0.05};
  EXPECT_TRUE(check_side_channels({{{1, 0}, good_turn()}}, SideChannelSettings{.top_logprobs = 2, .vocabulary = 10}).findings.empty());
  ReportedTurn answer = good_turn();
  (*answer.completion.token_ids)[1] = 2147483647;
  answer.completion.top_logprobs[1][0].token_id = 2147483647;
  const SideChannelCheck check = check_side_channels({{{1, 0}, answer}}, known);
  ASSERT_EQ(kinds(check), std::vector<std::string>{"token_beyond_vocabulary"});
  EXPECT_EQ(check.findings[0].index, 1);
  EXPECT_EQ(check.findings[0].detail, "token 2147483647 is beyond the model's vocabulary of 9");
  EXPECT_TRUE(check_side_channels({{{1, 0}, answer}}, SideChannelSettings{.top_logprobs = 0}).findings.empty()) << "unknown vocabulary";
  const SideChannelCheck alternative = check_side_channels({{{1, 0}, good_turn()}}, known);  // alternative 9 of token 0
  ASSERT_EQ(kinds(alternative), std::vector<std::string>{"token_beyond_vocabulary"});
  EXPECT_EQ(alternative.findings[0].detail, "alternative 9 is beyond the model's vocabulary of 9");
  ReportedTurn prompt = good_turn();
  prompt.prompt = {1, -3};
  EXPECT_EQ(check_side_channels({{{1, 0}, prompt}}, SideChannelSettings{.top_logprobs = 2, .vocabulary = 10}).findings.at(0).detail,
            "prompt token -3 is beyond the model's vocabulary of 10");
}

TEST(SideChannels, LogprobsAskedAndNotGivenAreAFindingOnlyWhenAsked) {
  ReportedTurn turn = good_turn();
  turn.completion.top_logprobs.clear();
  EXPECT_EQ(kinds(check_side_channels({{{1, 0}, turn}}, kAsked)), std::vector<std::string>{"logprobs_missing"});
  EXPECT_TRUE(check_side_channels({{{1, 0}, turn}}, SideChannelSettings{}).findings.empty());

  // A server that reports them for the tokens it sampled itself, not for accepted drafts.
  turn = good_turn();
  turn.completion.top_logprobs[1].clear();
  const SideChannelCheck some = check_side_channels({{{1, 0}, turn}}, kAsked);
  ASSERT_EQ(kinds(some), std::vector<std::string>{"logprobs_missing"});
  EXPECT_EQ(some.findings[0].index, 1);
  EXPECT_EQ(some.findings[0].detail, "1 of 2 tokens have no log-probabilities");
}

TEST(SideChannels, ZeroedLogprobsAreAFindingWhereSeveralAlternativesMakeThemImpossible) {
  ReportedTurn turn = good_turn();
  for (auto& alternatives : turn.completion.top_logprobs) {
    for (TokenLogprob& a : alternatives) a.logprob = 0.0;
  }
  EXPECT_EQ(kinds(check_side_channels({{{1, 0}, turn}}, kAsked)), (std::vector<std::string>{"logprobs_zero", "logprob_zero_chosen"}));
  turn.completion.top_logprobs = {{{5, 0.0}}, {{6, 0.0}}};  // one alternative each: certain tokens, possible
  EXPECT_TRUE(check_side_channels({{{1, 0}, turn}}, SideChannelSettings{.top_logprobs = 1}).findings.empty());
}

TEST(SideChannels, AGreedyChoiceMustBeTheMostLikelyOfItsAlternatives) {
  ReportedTurn absent = good_turn();
  absent.completion.top_logprobs[1] = {{8, -0.5}, {9, -1.5}};
  SideChannelCheck check = check_side_channels({{{1, 0}, absent}}, kAsked);
  ASSERT_EQ(kinds(check), std::vector<std::string>{"logprob_not_chosen"});
  EXPECT_EQ(check.findings[0].index, 1);
  EXPECT_EQ(check.findings[0].detail, "token 6 is not among its 2 alternatives, though greedy decoding chose it");

  ReportedTurn below = good_turn();
  below.completion.top_logprobs[0] = {{9, -0.9}, {5, -1.0}};
  check = check_side_channels({{{1, 0}, below}}, kAsked);
  ASSERT_EQ(kinds(check), std::vector<std::string>{"logprob_not_chosen"});
  EXPECT_EQ(check.findings[0].index, 0);

  ReportedTurn tie = good_turn();
  tie.completion.top_logprobs[0] = {{9, -0.90}, {5, -0.92}};  // within the tolerance
  EXPECT_TRUE(check_side_channels({{{1, 0}, tie}}, kAsked).findings.empty());
}

// Findings of `kind` for `turn` under `settings`, the first one's detail when any.
std::string finding(const ReportedTurn& turn, const std::string& kind, const SideChannelSettings& settings = kAsked) {
  for (const SideChannelFinding& f : check_side_channels({{{1, 0}, turn}}, settings).findings) {
    if (f.kind == kind) return "token " + std::to_string(*f.index) + ": " + f.detail;
  }
  return "none";
}

TEST(SideChannels, TheValueBesideTheTokenMustBeItsEntryAmongTheAlternatives) {
  ReportedTurn turn = good_turn();
  turn.completion.chosen_logprobs = {-0.12, -0.2};  // within the tolerance of -0.1
  EXPECT_TRUE(check_side_channels({{{1, 0}, turn}}, kAsked).findings.empty());
  turn.completion.chosen_logprobs = {-0.1, -0.9};
  EXPECT_EQ(finding(turn, "logprob_chosen_mismatch"), "token 1: token 6 has -0.9 beside it, -0.2 among its alternatives");
  turn.completion.chosen_logprobs = {std::nullopt, -0.2};  // a null beside a token: nothing to compare
  EXPECT_TRUE(check_side_channels({{{1, 0}, turn}}, kAsked).findings.empty());
}

TEST(SideChannels, AChosenLogprobOfZeroIsImpossibleWhileAnotherTokenHasMass) {
  // llama.cpp's accepted drafts before #27972: 0 beside the token, the alternatives right.
  ReportedTurn turn = good_turn();
  turn.completion.chosen_logprobs = {-0.1, 0.0};
  EXPECT_EQ(finding(turn, "logprob_zero_chosen"), "token 1: token 6 has log-probability 0, probability 1, yet its other alternatives hold probability 0.15");
  EXPECT_EQ(finding(turn, "logprob_chosen_mismatch"), "token 1: token 6 has 0 beside it, -0.2 among its alternatives");
  // A token the alternatives leave out, 0 beside it.
  turn.completion.top_logprobs[1] = {{8, -1.9}, {9, -2.0}};
  turn.completion.chosen_logprobs = {-0.1, 0.0};
  EXPECT_EQ(finding(turn, "logprob_zero_chosen"), "token 1: token 6 has log-probability 0, probability 1, yet its other alternatives hold probability 0.285");
  // Near certain, and right: the others' mass is below what the tolerance allows.
  turn = good_turn();
  turn.completion.top_logprobs[1] = {{6, 0.0}, {8, -20.0}};
  turn.completion.chosen_logprobs = {-0.1, 0.0};
  EXPECT_TRUE(check_side_channels({{{1, 0}, turn}}, kAsked).findings.empty());
}

TEST(SideChannels, NoLogprobIsAboveZeroAndTheListedProbabilitiesSumToAtMostOne) {
  ReportedTurn turn = good_turn();
  turn.completion.top_logprobs[0] = {{5, 0.04}, {9, -6.0}};  // above 0 by less than the tolerance
  EXPECT_TRUE(check_side_channels({{{1, 0}, turn}}, kAsked).findings.empty());
  turn.completion.top_logprobs[0] = {{5, 0.3}, {9, -6.0}};
  EXPECT_EQ(finding(turn, "logprob_positive"), "token 0: token 5 has log-probability 0.3, above 0");
  turn = good_turn();
  turn.completion.chosen_logprobs = {-0.1, 0.5};  // beside the token only
  EXPECT_EQ(finding(turn, "logprob_positive"), "token 1: token 6 has log-probability 0.5, above 0");
  turn = good_turn();
  turn.completion.top_logprobs[1] = {{6, -0.2}, {8, -0.9}};  // 0.819 + 0.407
  EXPECT_EQ(kinds(check_side_channels({{{1, 0}, turn}}, kAsked)), std::vector<std::string>{"logprob_mass"});
  EXPECT_EQ(finding(turn, "logprob_mass"), "token 1: the probabilities of token 6 and its alternatives sum to 1.225, above 1");
  turn.completion.top_logprobs[1] = {{8, -0.9}, {9, -1.0}};  // the chosen token counted from beside it
  turn.completion.chosen_logprobs = {-0.1, -0.2};
  EXPECT_EQ(finding(turn, "logprob_mass"), "token 1: the probabilities of token 6 and its alternatives sum to 1.593, above 1");
}

TEST(SideChannels, TheAlternativesAreOrderedAsTheApiPromises) {
  ReportedTurn reversed = good_turn();
  reversed.completion.top_logprobs[1] = {{8, -1.9}, {6, -0.2}};
  EXPECT_EQ(finding(reversed, "logprob_order"), "token 1: the alternatives of token 6 list token 6 (-0.2) after token 8 (-1.9)");
  SideChannelSettings unordered = kAsked;
  unordered.listing.order = AlternativesListing::Order::kNone;
  EXPECT_TRUE(check_side_channels({{{1, 0}, reversed}}, unordered).findings.empty()) << "a JSON object's keys";

  SideChannelSettings chosen_first = kAsked;
  chosen_first.listing.order = AlternativesListing::Order::kChosenFirst;
  EXPECT_TRUE(check_side_channels({{{1, 0}, good_turn()}}, chosen_first).findings.empty());
  EXPECT_EQ(finding(reversed, "logprob_order", chosen_first), "token 1: the alternatives of token 6 begin with token 8, not the chosen token");
  SideChannelSettings three = chosen_first;
  three.top_logprobs = 3;
  ReportedTurn sampled = good_turn();  // the chosen token first though less likely, then the rest in order
  sampled.completion.top_logprobs[1] = {{6, -2.0}, {8, -0.5}, {9, -1.5}};
  EXPECT_EQ(finding(sampled, "logprob_order", three), "none");
  sampled.completion.top_logprobs[1] = {{6, -2.0}, {9, -1.5}, {8, -0.5}};
  EXPECT_EQ(finding(sampled, "logprob_order", three), "token 1: the alternatives of token 6 list token 8 (-0.5) after token 9 (-1.5)");
}

TEST(SideChannels, TheAlternativesNumberWhatWasAsked) {
  ReportedTurn turn = good_turn();
  turn.completion.top_logprobs[1] = {{6, -0.2}};
  EXPECT_EQ(finding(turn, "logprob_count"), "token 1: token 6 has 1 alternatives; 2 were asked");
  turn.completion.top_logprobs[1] = {{6, -0.2}, {8, -1.9}, {9, -3.0}};
  EXPECT_EQ(finding(turn, "logprob_count"), "token 1: token 6 has 3 alternatives; 2 were asked");
  SideChannelSettings with_chosen = kAsked;
  with_chosen.listing.beyond_asked = 1;  // vLLM's completions: the chosen token beside the k
  EXPECT_EQ(finding(turn, "logprob_count", with_chosen), "none");
  turn.completion.top_logprobs[1].push_back({10, -3.1});
  EXPECT_EQ(finding(turn, "logprob_count", with_chosen), "token 1: token 6 has 4 alternatives; 2 or 3 were asked");
  SideChannelSettings small = kAsked;
  small.vocabulary = 1;  // a vocabulary smaller than asked, listed whole
  ReportedTurn whole = good_turn();
  whole.completion.top_logprobs = {{{5, 0.0}}, {{6, 0.0}}};
  EXPECT_EQ(finding(whole, "logprob_count", small), "none");
  SideChannelSettings ties = kAsked;
  ties.listing.ties_extend = true;  // TGI keeps every token tied with the k-th
  turn.completion.top_logprobs[1] = {{6, -0.2}, {8, -1.9}, {9, -1.9}};
  EXPECT_EQ(finding(turn, "logprob_count", ties), "none");
  turn.completion.top_logprobs[1] = {{6, -0.2}, {8, -1.9}, {9, -2.5}};
  EXPECT_EQ(finding(turn, "logprob_count", ties), "token 1: token 6 has 3 alternatives; 2 were asked");
}

TEST(SideChannels, AGreedyChoiceReportedBesideTheTokenMustBeTheLargest) {
  ReportedTurn turn = good_turn();
  turn.completion.chosen_logprobs = {-0.1, -2.4};
  EXPECT_EQ(finding(turn, "logprob_not_chosen"), "token 1: greedy decoding chose token 6 (-2.4 beside it), yet token 8 has -1.9");
  // Tied with the k-th, left out of the list: the value beside it shows the tie.
  turn.completion.top_logprobs[1] = {{8, -0.9}};
  turn.completion.chosen_logprobs = {-0.1, -0.9};
  EXPECT_EQ(finding(turn, "logprob_not_chosen", SideChannelSettings{.top_logprobs = 1}), "none");
  turn.completion.chosen_logprobs = {-0.1, -1.5};
  EXPECT_EQ(finding(turn, "logprob_not_chosen", SideChannelSettings{.top_logprobs = 1}),
            "token 1: token 6 is not among its 1 alternatives, though greedy decoding chose it");
}

TEST(SideChannels, AFinishReasonOfLengthBeforeTheLengthAskedIsAFinding) {
  ReportedTurn turn = good_turn();
  turn.completion.finish_reason = "length";
  const SideChannelSettings asked{.max_new_tokens = 4};
  SideChannelCheck check = check_side_channels({{{3, 0}, turn}}, asked);
  ASSERT_EQ(kinds(check), std::vector<std::string>{"finish_reason"});
  EXPECT_EQ(check.findings[0].detail, "finish_reason is length after 2 of the 4 tokens asked");
  EXPECT_TRUE(check_side_channels({{{3, 0}, turn}}, SideChannelSettings{.max_new_tokens = 2}).findings.empty());
  turn.completion.finish_reason = "stop";
  EXPECT_TRUE(check_side_channels({{{3, 0}, turn}}, asked).findings.empty());
}

TEST(SideChannels, TheSameTokensMustEndForTheSameReason) {
  ReportedTurns reference = {{{1, 0}, good_turn()}, {{2, 0}, good_turn()}};
  reference[{1, 0}].completion.finish_reason = "stop";
  reference[{2, 0}].completion.finish_reason = "stop";
  ReportedTurns other = reference;
  other[{1, 0}].completion.finish_reason = "length";
  other[{2, 0}].completion.finish_reason = "length";
  other[{2, 0}].completion.token_ids = std::vector<int64_t>{5, 8};  // other tokens may end otherwise
  const std::vector<SideChannelFinding> findings = compare_reports(reference, other, false, 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].question_id, 1);
  EXPECT_EQ(findings[0].kind, "finish_reason_parity");
  other[{1, 0}].completion.finish_reason.reset();
  EXPECT_TRUE(compare_reports(reference, other, false, 0.05).empty()) << "a reason not given is not compared";
}

TEST(SideChannels, PromptLogprobsMustComeOnePerPromptTokenAfterTheFirstEachWithItsToken) {
  const SideChannelSettings asked{.prompt_logprobs = 1};
  ReportedTurn turn = good_turn();  // prompt {1, 2}
  EXPECT_EQ(kinds(check_side_channels({{{1, 0}, turn}}, asked)), std::vector<std::string>{"prompt_logprobs_missing"});
  turn.completion.prompt_logprobs = {{{2, -1.5}, {4, -0.5}}};
  EXPECT_TRUE(check_side_channels({{{1, 0}, turn}}, asked).findings.empty());
  turn.completion.prompt_logprobs = {{{4, -0.5}}};
  SideChannelCheck check = check_side_channels({{{1, 0}, turn}}, asked);
  ASSERT_EQ(kinds(check), std::vector<std::string>{"prompt_logprob_mismatch"});
  EXPECT_EQ(check.findings[0].index, 1);
  EXPECT_EQ(check.findings[0].detail, "prompt token 2 is not among its 1 log-probabilities");
  turn.completion.prompt_logprobs = {{{2, -1.5}}, {{2, -1.5}}};
  EXPECT_EQ(kinds(check_side_channels({{{1, 0}, turn}}, asked)), std::vector<std::string>{"prompt_logprob_mismatch"});
}

TEST(SideChannels, TheSamePromptMustGetTheSameLogprobsInEverySchedule) {
  ReportedTurn turn = good_turn();
  turn.completion.prompt_logprobs = {{{2, -1.5}}};
  const ReportedTurns reference = {{{1, 0}, turn}};
  ReportedTurns other = reference;
  other[{1, 0}].completion.prompt_logprobs[0][0].logprob = -1.2;
  const std::vector<SideChannelFinding> findings = compare_reports(reference, other, false, 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "prompt_logprob_parity");
  EXPECT_EQ(findings[0].index, 1);
  EXPECT_TRUE(compare_reports(reference, other, false, 0.5).empty());
}

TEST(SideChannels, ParityComparesTheSameTokensUpToTheFirstThatDiffers) {
  const ReportedTurns reference = {{{1, 0}, good_turn()}, {{2, 0}, good_turn()}};
  ReportedTurns other = reference;
  other[{1, 0}].completion.top_logprobs[1][0].logprob = -0.4;  // 0.2 from the reference's
  other[{2, 0}].completion.token_ids = std::vector<int64_t>{5, 7};  // differs from token 1 on: only token 0 compared
  other[{2, 0}].completion.top_logprobs[1][0] = {7, -3.0};
  const std::vector<SideChannelFinding> findings = compare_reports(reference, other, true, 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].question_id, 1);
  EXPECT_EQ(findings[0].index, 1);
  EXPECT_EQ(findings[0].kind, "logprob_parity");
  EXPECT_TRUE(compare_reports(reference, other, true, 0.25).empty());
  EXPECT_TRUE(compare_reports(reference, other, false, 0.05).empty()) << "log-probabilities compared only when asked";
}

TEST(SideChannels, ParityReadsTheValueBesideTheTokenInEverySchedule) {
  ReportedTurn alone = good_turn();
  alone.completion.chosen_logprobs = {-0.1, -0.2};
  ReportedTurn crowded = alone;
  crowded.completion.chosen_logprobs[1] = 0.0;  // changed only where speculation accepted it; the list as alone
  const std::vector<SideChannelFinding> findings = compare_reports({{{1, 0}, alone}}, {{{1, 0}, crowded}}, true, 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "logprob_parity");
  EXPECT_EQ(findings[0].detail, "token 6 has 0 here, -0.2 in the reference schedule");
}

}  // namespace
}  // namespace specgate::cli
