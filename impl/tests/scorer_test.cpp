#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impl/common/error.h"
#include "impl/scoring/near_tie.h"
#include "impl/scoring/scorer.h"
#include "impl/tests/temp_folder.h"
#include "impl/tokenizer/byte_tokenizer.h"

namespace specgate {
namespace {

class ScorerTest : public TempFolderTest {
 protected:
  std::filesystem::path write(const std::string& name, const std::vector<std::string>& lines) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream out(path, std::ios::binary);
    for (const std::string& line : lines) out << line << "\n";
    return path;
  }

  ScoreReport score(const std::vector<std::string>& reference, const std::vector<std::string>& candidate,
                    ScoreSettings settings = {}) {
    return score_answers({.reference = write("reference.jsonl", reference),
                          .candidate = write("candidate.jsonl", candidate),
                          .settings = settings});
  }

  std::string error_for(const std::vector<std::string>& reference, const std::vector<std::string>& candidate) {
    try {
      score(reference, candidate);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }

  std::string in_dir(const std::string& name) const { return (dir_ / name).string(); }
};

std::string tokens(int64_t id, const std::string& category, const std::string& ids) {
  return R"({"question_id": )" + std::to_string(id) + R"(, "category": ")" + category + R"(", "token_ids": [)" + ids + "]}";
}

std::string text(int64_t id, const std::string& value) {
  return R"({"question_id": )" + std::to_string(id) + R"(, "text": ")" + value + R"("})";
}

const ItemResult& item_for(const ScoreReport& report, int64_t id) {
  for (const ItemResult& item : report.items) {
    if (item.question_id == id) return item;
  }
  throw std::out_of_range("no item " + std::to_string(id));
}

TEST_F(ScorerTest, ScoresEachQuestionAndAggregatesPerCategorySubtaskAndOverall) {
  const ScoreReport report = score(
      {tokens(1, "writing", "1, 2, 3, 4"), tokens(2, "coding", "5, 6"), tokens(3, "qa", "7, 8, 9, 10")},
      {tokens(1, "writing", "1, 2, 3, 4"), tokens(2, "coding", "5, 0"), tokens(3, "qa", "7, 8, 9, 10")});
  ASSERT_EQ(report.items.size(), 3u);
  EXPECT_TRUE(item_for(report, 1).comparison.exact);
  const ItemResult& two = item_for(report, 2);
  EXPECT_FALSE(two.comparison.exact);
  EXPECT_EQ(two.unit, Unit::kTokenIds);
  EXPECT_EQ(two.subtask, "mt_bench");
  EXPECT_DOUBLE_EQ(two.comparison.partial, 0.5);
  ASSERT_TRUE(two.divergence.has_value());
  EXPECT_EQ(two.divergence->where.index, 1);
  EXPECT_EQ(two.divergence->where.reference_symbol, 6);
  EXPECT_EQ(two.divergence->where.candidate_symbol, 0);
  EXPECT_EQ(two.divergence->attribution.kind, Attribution::kUnattributed);
  EXPECT_EQ(two.divergence->before, std::vector<int64_t>{5});

  EXPECT_EQ(report.overall.questions, 3);
  EXPECT_EQ(report.overall.exact, 2);
  EXPECT_DOUBLE_EQ(*report.overall.exact_match, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(*report.overall.partial_match, 2.5 / 3.0);
  EXPECT_EQ(report.overall.divergences.unattributed, 1);
  EXPECT_EQ(unit_summary(report.overall), "token_ids");
  ASSERT_EQ(report.by_subtask.size(), 2u);
  EXPECT_EQ(report.by_subtask[0].first, "mt_bench");
  EXPECT_EQ(report.by_subtask[0].second.questions, 2);
  EXPECT_DOUBLE_EQ(*report.by_subtask[0].second.exact_match, 0.5);
  EXPECT_DOUBLE_EQ(*report.by_subtask[0].second.partial_match, 0.75);
  EXPECT_EQ(report.by_subtask[1].first, "qa");
  EXPECT_DOUBLE_EQ(*report.by_subtask[1].second.exact_match, 1.0);
  ASSERT_EQ(report.by_category.size(), 3u);
  EXPECT_EQ(report.by_category[1].first, "coding");
  EXPECT_DOUBLE_EQ(*report.by_category[1].second.exact_match, 0.0);
  EXPECT_EQ(report.reference.records, 3);
  EXPECT_EQ(report.reference.sha256.size(), 64u);

  EXPECT_FALSE(report.gate.passed);
  ASSERT_EQ(report.gate.reasons.size(), 1u);
  EXPECT_EQ(report.gate.reasons[0], "exact match 0.6667 is below --min-exact 1 (2 of 3 questions)");
}

std::string timed(int64_t id, const std::string& category, const std::string& speed) {
  return R"({"question_id": )" + std::to_string(id) + R"(, "category": ")" + category +
         R"(", "choices": [{"turns": ["x"], "token_ids": [[1, 2, 3, 4]])" + speed + "}]}";
}

TEST_F(ScorerTest, ReportsSpeedPerSubtaskAndOverallAsSpecBenchDoes) {
  const ScoreReport report = score(
      {timed(1, "writing", R"(, "wall_time": [2.0])"), timed(2, "qa", R"(, "wall_time": [1.0])"),
       timed(3, "qa", R"(, "wall_time": [4.0])")},
      {timed(1, "writing", R"(, "wall_time": [1.0], "accept_lengths": [3, 1])"),
       timed(2, "qa", R"(, "wall_time": [0.5], "decoding_steps": [1], "drafted_tokens": [4], "accepted_drafts": [3])"),
       timed(3, "qa", "")});
  const SpeedSummary& mt = report.by_subtask[0].second.speed;
  EXPECT_DOUBLE_EQ(mt.tokens_per_pass.value(), 2.0);
  EXPECT_FALSE(mt.acceptance.has_value());
  EXPECT_DOUBLE_EQ(mt.reference_tokens_per_second.value(), 2.0);
  EXPECT_DOUBLE_EQ(mt.candidate_tokens_per_second.value(), 4.0);
  EXPECT_DOUBLE_EQ(mt.speedup.value(), 2.0);
  const SpeedSummary& qa = report.by_subtask[1].second.speed;
  EXPECT_DOUBLE_EQ(qa.tokens_per_pass.value(), 4.0) << "new_tokens / decoding_steps where accept_lengths are absent";
  EXPECT_DOUBLE_EQ(qa.acceptance.value(), 0.75);
  EXPECT_DOUBLE_EQ(qa.reference_tokens_per_second.value(), (4.0 + 1.0) / 2) << "a mean over questions";
  EXPECT_DOUBLE_EQ(qa.candidate_tokens_per_second.value(), 8.0) << "question 3's candidate has no wall_time";
  const SpeedSummary& all = report.overall.speed;
  EXPECT_DOUBLE_EQ(all.tokens_per_pass.value(), 8.0 / 3.0);
  EXPECT_DOUBLE_EQ(all.reference_tokens_per_second.value(), (2.0 + 4.0 + 1.0) / 3);
  EXPECT_DOUBLE_EQ(all.candidate_tokens_per_second.value(), 6.0);
  EXPECT_DOUBLE_EQ(all.speedup.value(), 6.0 / (7.0 / 3));
  EXPECT_TRUE(report.gate.passed);
}

TEST_F(ScorerTest, PassesAServerLeftOutOfItsListCountOneTokenEach) {
  // 10 tokens: two listed passes appended 3 and 2 (drafts verified), the 5 others one each.
  const std::string answer = R"({"question_id": 1, "category": "qa", "choices": [{"turns": ["x"], )"
                             R"("token_ids": [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]], "wall_time": [1.0], )"
                             R"("accept_lengths": [[3, 2]], "round_drafts": [[4, 4]]}]})";
  const ScoreReport report = score({answer}, {answer});
  EXPECT_DOUBLE_EQ(report.overall.speed.tokens_per_pass.value(), 10.0 / 7.0);
}

TEST_F(ScorerTest, SpeedGatesFailBelowTheirBoundAndWhereNothingCanBeComputed) {
  ScoreSettings settings;
  settings.gate.min_tokens_per_pass = 2.5;
  settings.gate.min_speedup = 1.5;
  const ScoreReport slow = score({timed(1, "qa", R"(, "wall_time": [1.0])")},
                                 {timed(1, "qa", R"(, "wall_time": [1.0], "accept_lengths": [2, 2])")}, settings);
  EXPECT_EQ(slow.gate.reasons, (std::vector<std::string>{
                                   "tokens per target pass 2 is below --min-tokens-per-pass 2.5",
                                   "per-request speedup 1x over the reference is below --min-speedup 1.5"}));
  const ScoreReport untimed = score({tokens(1, "qa", "1")}, {tokens(1, "qa", "1")}, settings);
  EXPECT_FALSE(untimed.overall.speed.any());
  ASSERT_EQ(untimed.gate.reasons.size(), 2u);
  EXPECT_NE(untimed.gate.reasons[0].find("tokens per pass cannot be computed"), std::string::npos);
  EXPECT_NE(untimed.gate.reasons[1].find("speedup cannot be computed"), std::string::npos);
  settings.gate.min_tokens_per_pass = 2.0;
  settings.gate.min_speedup = 1.0;
  EXPECT_TRUE(score({timed(1, "qa", R"(, "wall_time": [1.0])")},
                    {timed(1, "qa", R"(, "wall_time": [1.0], "accept_lengths": [2, 2])")}, settings)
                  .gate.passed);
}

// Speculative answers that say how their batch was laid out, `realignments` each.
std::string laid_out(int64_t id, int64_t realignments) {
  return R"({"question_id": )" + std::to_string(id) + R"(, "category": "qa", "choices": [{"turns": ["x"],)" +
         R"( "token_ids": [[1, 2]], "accept_lengths": [[1, 1]], "drafted_tokens": [8], "accepted_drafts": [0],)" +
         R"( "ragged_rounds": [1], "realignments": [)" + std::to_string(realignments) +
         R"(], "finished_early": [false]}], "run": {"engine": "eqspec", "batch_size": 4, "started_at": 1,)" +
         R"( "max_new_tokens": 2, "sampling": {"temperature": 0}}})";
}

TEST_F(ScorerTest, CoverageWarnsAndGatesWhereTheRunRealignedTooLittleToCatchALayoutFault) {
  const std::vector<std::string> reference = {tokens(1, "qa", "1, 2"), tokens(2, "qa", "1, 2")};
  const ScoreReport few = score(reference, {laid_out(1, 1), laid_out(2, 2)});
  const Coverage& coverage = few.candidate_coverage;
  EXPECT_TRUE(coverage.known());
  EXPECT_EQ(coverage.rounds, 4);
  EXPECT_EQ(coverage.drafted, 16);
  EXPECT_EQ(coverage.ragged_rounds, 2);
  EXPECT_EQ(coverage.realignments, 3);
  ASSERT_TRUE(coverage_warning(coverage).has_value());
  EXPECT_NE(coverage_warning(coverage)->find("3 realignments"), std::string::npos) << *coverage_warning(coverage);
  EXPECT_TRUE(few.gate.passed) << "a warning, not a verdict, unless --min-coverage asks";

  const ScoreReport enough = score(reference, {laid_out(1, kLayoutFaultRealignments), laid_out(2, 0)});
  EXPECT_FALSE(coverage_warning(enough.candidate_coverage).has_value());

  ScoreSettings settings;
  settings.gate.min_coverage = 4;
  EXPECT_EQ(score(reference, {laid_out(1, 1), laid_out(2, 2)}, settings).gate.reasons,
            std::vector<std::string>{"3 realignments in the candidate's run, fewer than --min-coverage 4: it could not "
                                     "have caught the layout faults that need more"});
  EXPECT_TRUE(score(reference, {laid_out(1, 2), laid_out(2, 2)}, settings).gate.passed);
  const ScoreReport unknown = score(reference, {laid_out(1, 9), tokens(2, "qa", "1, 2")}, settings);
  EXPECT_FALSE(unknown.candidate_coverage.known());
  ASSERT_EQ(unknown.gate.reasons.size(), 1u);
  EXPECT_NE(unknown.gate.reasons[0].find("coverage cannot be computed (1 of the 2 compared answers"), std::string::npos)
      << unknown.gate.reasons[0];
  EXPECT_NE(coverage_warning(unknown.candidate_coverage).value_or("").find("coverage unknown"), std::string::npos);
  EXPECT_FALSE(coverage_warning(score(reference, reference).candidate_coverage).has_value())
      << "answers of one sequence at a time that drafted nothing have no layout to exercise";
}

TEST_F(ScorerTest, ComparesCodePointsWhenEitherSideLacksTokenIds) {
  const ScoreReport report =
      score({R"({"question_id": 1, "token_ids": [1, 2], "text": "d\u00e9j\u00e0 vu"})", text(2, "abc")},
            {text(1, "d\u00e9ja vu"), R"({"question_id": 2, "token_ids": [3], "text": "abc"})"});
  const ItemResult& one = item_for(report, 1);
  EXPECT_EQ(one.unit, Unit::kCodePoints);
  EXPECT_EQ(one.comparison.reference_length, 7);
  EXPECT_EQ(one.comparison.lcp, 3);
  EXPECT_EQ(one.divergence->where.reference_symbol, 0xE0);
  EXPECT_EQ(one.divergence->where.candidate_symbol, 'a');
  EXPECT_EQ(one.divergence->attribution.kind, Attribution::kUnattributed);
  EXPECT_TRUE(item_for(report, 2).comparison.exact);
  EXPECT_EQ(unit_summary(report.overall), "code_points");
}

TEST_F(ScorerTest, ItemsAndMissingIdsAreListedByQuestionWhateverTheFileOrder) {
  const ScoreReport report = score({text(3, "c"), text(1, "a"), text(4, "d"), text(2, "b")}, {text(2, "b"), text(3, "x")});
  std::vector<int64_t> ids;
  for (const ItemResult& item : report.items) ids.push_back(item.question_id);
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(report.missing_ids, (std::vector<int64_t>{1, 4}));
}

std::string with_prompts(int64_t id, const std::string& token_ids, const std::string& prompt_token_ids) {
  return R"({"question_id": )" + std::to_string(id) + R"(, "choices": [{"index": 0, "turns": ["a", "b"], "token_ids": )" +
         token_ids + R"(, "prompt_token_ids": )" + prompt_token_ids + "}]}";
}

TEST_F(ScorerTest, AnswersFromDifferentPromptsAreAFindingOfTheirOwnNotADivergence) {
  const ScoreReport report =
      score({with_prompts(1, "[[5, 6], [7]]", "[[1, 2, 3], [1, 2, 3, 5, 6, 9]]"),
             with_prompts(2, "[[5, 6], [7]]", "[[1, 2, 3], [1, 2, 3, 5, 6, 9]]"),
             with_prompts(3, "[[5, 6], [7]]", "[[1, 2, 3], [1, 2, 3, 5, 6, 9]]")},
            {with_prompts(1, "[[5, 6], [7]]", "[[1, 2, 4], [1, 2, 4, 5, 6, 9]]"),
             // Turn 0's answers differ, so turn 1's prompts, which hold them, differ too: a divergence.
             with_prompts(2, "[[5, 8], [7]]", "[[1, 2, 3], [1, 2, 3, 5, 8, 9]]"),
             with_prompts(3, "[[5, 6], [7]]", "[[1, 2, 3], [1, 2, 3, 5, 6, 9]]")});
  const ItemResult& one = item_for(report, 1);
  ASSERT_TRUE(one.prompt_mismatch.has_value());
  EXPECT_EQ(one.prompt_mismatch->turn, 0);
  EXPECT_EQ(one.prompt_mismatch->index, 2);
  EXPECT_FALSE(one.comparison.exact);
  EXPECT_FALSE(one.divergence.has_value());
  EXPECT_FALSE(item_for(report, 2).prompt_mismatch.has_value());
  EXPECT_TRUE(item_for(report, 2).divergence.has_value());
  EXPECT_TRUE(item_for(report, 3).comparison.exact);
  EXPECT_EQ(report.overall.prompt_mismatches, 1);
  EXPECT_DOUBLE_EQ(*report.overall.exact_match, 0.5) << "1 exact of the 2 compared; question 1 was not compared";
  EXPECT_EQ(report.prompt_mismatch_ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(report.overall.divergences.hard + report.overall.divergences.unattributed, 1) << "question 2 alone diverges";
  ASSERT_FALSE(report.gate.passed);
  EXPECT_NE(report.gate.reasons.front().find("1 question was answered from different prompts"), std::string::npos)
      << report.gate.reasons.front();
}

// An answer of two turns from a run with max_new_tokens `budget`; turn 1's prompt holds turn 0's answer.
std::string budgeted(int64_t id, int64_t budget, const std::string& turn0, const std::string& turn1) {
  return R"({"question_id": )" + std::to_string(id) + R"(, "run": {"engine": "e", "batch_size": 1, "started_at": 1, "max_new_tokens": )" +
         std::to_string(budget) + R"(}, "choices": [{"index": 0, "turns": ["a", "b"], "token_ids": [[)" + turn0 + "], [" + turn1 +
         R"(]], "prompt_token_ids": [[9], [9, )" + turn0 + R"(, 8]]}]})";
}

TEST_F(ScorerTest, RunsWithAnotherMaxNewTokensAreComparedUpToTheSmallerAndSaySo) {
  const ScoreReport report = score({budgeted(1, 4, "1, 2, 3, 4", "5, 6, 7, 8"), budgeted(2, 4, "1, 2", "3, 4, 5, 6"),
                                    budgeted(3, 4, "1, 2, 3, 4", "5")},
                                   {budgeted(1, 3, "1, 2, 3", "5, 6, 7"), budgeted(2, 3, "1, 2", "3, 4, 7"),
                                    budgeted(3, 3, "1, 2, 7", "5")});
  const ItemResult& cut = item_for(report, 1);
  EXPECT_TRUE(cut.comparison.exact) << "turn 0 agrees over 3 tokens; turn 1, whose prompts differ, is not compared";
  EXPECT_FALSE(cut.prompt_mismatch.has_value());
  EXPECT_EQ(cut.compared_tokens_per_turn, 3);
  EXPECT_EQ(cut.comparison.reference_length, 3);
  const ItemResult& second_turn = item_for(report, 2);
  ASSERT_TRUE(second_turn.divergence.has_value()) << "turn 0 ended early on both sides: turn 1 is compared, up to 3";
  EXPECT_EQ(second_turn.divergence->where.turn, 1);
  EXPECT_NE(second_turn.divergence->attribution.kind, Attribution::kLength);
  EXPECT_EQ(item_for(report, 3).divergence->where.index_in_turn, 2) << "a token inside the budget still diverges";
  EXPECT_EQ(report.overall.divergences.length, 0);
  ASSERT_TRUE(report.run_length_mismatch.has_value());
  EXPECT_EQ(report.run_length_mismatch->answers, 3);
  EXPECT_EQ(report.run_length_mismatch->reference_max_new_tokens, 4);
  EXPECT_EQ(report.run_length_mismatch->candidate_max_new_tokens, 3);
  EXPECT_FALSE(report.run_length_mismatch->other_pairs);

  const ScoreReport same = score({budgeted(1, 4, "1, 2, 3, 4", "5")}, {budgeted(1, 4, "1, 2, 3", "5")});
  EXPECT_FALSE(same.run_length_mismatch.has_value());
  EXPECT_EQ(same.overall.divergences.length, 1) << "one budget on both sides: a shorter turn is a length divergence";
}

std::string from_run(int64_t id, double wall_time, double tstamp, const std::string& engine, int64_t batch_size,
                     double started_at) {
  return R"({"question_id": )" + std::to_string(id) + R"(, "tstamp": )" + std::to_string(tstamp) +
         R"(, "run": {"engine": ")" + engine + R"(", "batch_size": )" + std::to_string(batch_size) +
         R"(, "started_at": )" + std::to_string(started_at) + R"(}, "choices": [{"index": 0, "turns": ["a"], "token_ids": [[1, 2, 3, 4]], "wall_time": [)" +
         std::to_string(wall_time) + "]}]}";
}

TEST_F(ScorerTest, APromptMismatchNamesEachSidesTemplateAndAGroupOfThemHasNoMatchRate) {
  const auto templated = [](const std::string& chat_template, const std::string& prompt) {
    return R"({"question_id": 1, "chat_template": ")" + chat_template +
           R"(", "choices": [{"index": 0, "turns": ["a"], "token_ids": [[5]], "prompt_token_ids": [)" + prompt + "]}]}";
  };
  const ScoreReport report = score({templated("raw", "[1, 2]")}, {templated("vicuna", "[1, 3]")});
  const PromptMismatch& mismatch = *item_for(report, 1).prompt_mismatch;
  EXPECT_EQ(mismatch.reference_chat_template, "raw");
  EXPECT_EQ(mismatch.candidate_chat_template, "vicuna");
  EXPECT_FALSE(report.overall.exact_match.has_value()) << "no question compared: no rate, not 0%";
  EXPECT_FALSE(report.overall.partial_match.has_value());
  ASSERT_EQ(report.gate.reasons.size(), 1u) << "the prompt finding alone fails the gate, not a 0% exact match";
  EXPECT_NE(report.gate.reasons[0].find("answered from different prompts"), std::string::npos);
}

TEST_F(ScorerTest, RunThroughputIsTokensOverEachRunsWallTimeBesideThePerRequestRate) {
  // The reference: one request at a time, 1 s each. The candidate: batches of 2 answered together
  // in 1.5 s, written in two runs (a resumed file) with a pause between them that must not count.
  const ScoreReport report = score(
      {from_run(1, 1.0, 101.0, "oracle", 1, 100.0), from_run(2, 1.0, 102.0, "oracle", 1, 100.0),
       from_run(3, 1.0, 103.0, "oracle", 1, 100.0), from_run(4, 1.0, 104.0, "oracle", 1, 100.0)},
      {from_run(1, 1.5, 201.5, "eqspec", 2, 200.0), from_run(2, 1.5, 201.5, "eqspec", 2, 200.0),
       from_run(3, 1.5, 501.5, "eqspec", 2, 500.0), from_run(4, 1.5, 501.5, "eqspec", 2, 500.0)},
      {.gate = {.min_speedup = 1.2}});
  const SpeedSummary& speed = report.overall.speed;
  EXPECT_DOUBLE_EQ(*speed.reference_tokens_per_second, 4.0) << "per request: 4 tokens in 1 s";
  EXPECT_DOUBLE_EQ(*speed.candidate_tokens_per_second, 4.0 / 1.5);
  EXPECT_DOUBLE_EQ(*speed.reference_run_tokens_per_second, 16.0 / 4.0);
  EXPECT_DOUBLE_EQ(*speed.candidate_run_tokens_per_second, 16.0 / 3.0) << "two runs of 1.5 s, the pause between them left out";
  EXPECT_DOUBLE_EQ(*speed.run_speedup, 4.0 / 3.0);
  ASSERT_EQ(report.candidate_runs.size(), 2u);
  EXPECT_EQ(report.candidate_runs[0].engine, "eqspec");
  EXPECT_EQ(report.candidate_runs[0].batch_size, 2);
  EXPECT_EQ(report.candidate_runs[0].answers, 2);
  EXPECT_TRUE(report.gate.passed) << "--min-speedup gates the run throughput (1.33x), not per request (0.67x)";

  const ScoreReport untimed = score({from_run(1, 1.0, 101.0, "oracle", 1, 100.0), text(2, "a")},
                                    {from_run(1, 1.0, 201.0, "oracle", 1, 200.0), text(2, "a")});
  EXPECT_FALSE(untimed.overall.speed.run_speedup.has_value()) << "an answer without its run leaves the runs unknown";
}

TEST_F(ScorerTest, EmptyAnswersAreScoredByTheEdgeRules) {
  const ScoreReport report = score({tokens(1, "qa", ""), tokens(2, "qa", ""), tokens(3, "qa", "4, 5")},
                                   {tokens(1, "qa", ""), tokens(2, "qa", "9"), tokens(3, "qa", "")});
  EXPECT_TRUE(item_for(report, 1).comparison.exact);
  EXPECT_DOUBLE_EQ(item_for(report, 1).comparison.partial, 1.0);
  EXPECT_DOUBLE_EQ(item_for(report, 2).comparison.partial, 0.0);
  EXPECT_EQ(item_for(report, 2).divergence->attribution.kind, Attribution::kLength);
  EXPECT_EQ(item_for(report, 3).divergence->attribution.note, "the candidate's turn 0 ends here, the reference's goes on");
  EXPECT_EQ(report.overall.divergences.length, 2);
}

TEST_F(ScorerTest, MissingAndUnexpectedIdsAreReportedAndFailTheGate) {
  ScoreSettings settings;
  settings.gate.min_exact = 0.0;
  const ScoreReport report = score({tokens(1, "qa", "1"), tokens(2, "qa", "2, 3"), tokens(3, "qa", "3")},
                                   {tokens(3, "qa", "3"), tokens(9, "qa", "1"), tokens(1, "qa", "1")}, settings);
  ASSERT_EQ(report.items.size(), 3u);
  const ItemResult& two = item_for(report, 2);
  EXPECT_TRUE(two.missing);
  EXPECT_FALSE(two.comparison.exact);
  EXPECT_EQ(two.comparison.reference_length, 2);
  EXPECT_DOUBLE_EQ(two.comparison.partial, 0.0);
  EXPECT_EQ(report.missing_ids, std::vector<int64_t>{2});
  EXPECT_EQ(report.unexpected_ids, std::vector<int64_t>{9});
  EXPECT_EQ(report.overall.missing, 1);
  EXPECT_EQ(report.overall.exact, 2);
  EXPECT_FALSE(report.gate.passed);
  ASSERT_EQ(report.gate.reasons.size(), 2u);
  EXPECT_EQ(report.gate.reasons[0], "1 question of the reference has no answer in the candidate: 2");
  EXPECT_EQ(report.gate.reasons[1], "1 answer of the candidate is for questions not in the reference: 9");
}

TEST_F(ScorerTest, TheOrderOfTheFilesDoesNotMatter) {
  const std::vector<std::string> reference = {tokens(1, "qa", "1, 2"), tokens(2, "qa", "3, 4"), tokens(3, "qa", "5, 6"),
                                              tokens(4, "qa", "7, 8")};
  const ScoreReport in_order = score(reference, {tokens(1, "qa", "1, 2"), tokens(2, "qa", "3, 0"), tokens(3, "qa", "5, 6"),
                                                 tokens(4, "qa", "0")});
  const ScoreReport reversed = score(reference, {tokens(4, "qa", "0"), tokens(3, "qa", "5, 6"), tokens(2, "qa", "3, 0"),
                                                 tokens(1, "qa", "1, 2")});
  ASSERT_EQ(reversed.items.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(reversed.items[i].question_id, in_order.items[i].question_id);
    EXPECT_EQ(reversed.items[i].comparison.exact, in_order.items[i].comparison.exact);
    EXPECT_EQ(reversed.items[i].comparison.lcp, in_order.items[i].comparison.lcp);
    EXPECT_EQ(reversed.items[i].candidate_line, 5 - in_order.items[i].candidate_line.value());
  }
  EXPECT_EQ(reversed.overall.exact, 2);
  EXPECT_DOUBLE_EQ(*reversed.overall.partial_match, *in_order.overall.partial_match);
}

TEST_F(ScorerTest, AttributesDivergencesFromTheReferencesRecordedLogprobsOnly) {
  const std::string reference =
      R"({"question_id": 1, "choices": [{"turns": ["x"], "token_ids": [[10, 20, 30]], "top_logprobs": [[)"
      R"([{"token_id": 10, "logprob": -0.1}], [{"token_id": 20, "logprob": -0.70}, {"token_id": 21, "logprob": -0.72},)"
      R"( {"token_id": 22, "logprob": -3.0}], [{"token_id": 30, "logprob": -0.1}]]]}]})";
  const auto candidate = [](int64_t token) {
    // The candidate's own log-probabilities claim a tie; they must be ignored.
    return R"({"question_id": 1, "choices": [{"turns": ["y"], "token_ids": [[10, )" + std::to_string(token) +
           R"(]], "top_logprobs": [[[{"token_id": 10, "logprob": 0}], [{"token_id": 20, "logprob": -1}, {"token_id": )" +
           std::to_string(token) + R"(, "logprob": -1}]]]}]})";
  };
  ScoreSettings settings;
  settings.gate.max_hard_divergences = 0;
  const ScoreReport near = score({reference}, {candidate(21)}, settings);
  const AttributionResult& tie = near.items[0].divergence->attribution;
  EXPECT_EQ(tie.kind, Attribution::kNearTie);
  EXPECT_EQ(tie.source, MarginSource::kTopLogprobs);
  EXPECT_NEAR(*tie.margin, 0.02, 1e-12);
  EXPECT_EQ(near.overall.divergences.near_tie, 1);

  const ScoreReport hard = score({reference}, {candidate(22)}, settings);
  EXPECT_EQ(hard.items[0].divergence->attribution.kind, Attribution::kHard);
  EXPECT_NEAR(*hard.items[0].divergence->attribution.margin, 2.3, 1e-12);
  EXPECT_EQ(hard.overall.divergences.hard, 1);
  EXPECT_EQ(hard.gate.reasons.back(), "1 hard divergence, more than --max-hard-divergences 0");

  settings.near_tie_threshold = 3.0;
  EXPECT_EQ(score({reference}, {candidate(22)}, settings).items[0].divergence->attribution.kind, Attribution::kNearTie);
}

// Answers from a run in `dtype` whose second token is `token`; the reference records 20 at -0.7
// and 23 at -1.0 (a margin of 0.3 nats), 22 at -3.0.
std::string in_dtype(const std::string& dtype, int64_t token, bool reference) {
  const std::string logprobs =
      reference ? R"(, "top_logprobs": [[[{"token_id": 10, "logprob": -0.1}], [{"token_id": 20, "logprob": -0.7},)"
                  R"( {"token_id": 23, "logprob": -1.0}, {"token_id": 22, "logprob": -3.0}]]])"
                : "";
  return R"({"question_id": 1, "run": {"engine": "e", "batch_size": 1, "started_at": 1, "dtype": ")" + dtype +
         R"("}, "choices": [{"turns": ["x"], "token_ids": [[10, )" + std::to_string(token) + "]]" + logprobs + "}]}";
}

TEST_F(ScorerTest, TheNearTieThresholdWidensToWhatTheAnswersRoundingCanFlip) {
  const auto attributed = [&](const std::string& reference_dtype, const std::string& candidate_dtype, int64_t token,
                              ScoreSettings settings = {}) {
    const ScoreReport report =
        score({in_dtype(reference_dtype, 20, true)}, {in_dtype(candidate_dtype, token, false)}, settings);
    return *report.items[0].divergence;
  };
  const double bfloat16 = *margin_rounding_of("bfloat16");
  ASSERT_GT(bfloat16, 0.3) << "bfloat16 flips margins of 0.3 nats (reports/scoring/near_tie.md)";
  ASSERT_LT(bfloat16, 2.3);
  EXPECT_EQ(attributed("float32", "float32", 23).attribution.kind, Attribution::kHard) << "float32 keeps 0.1 nats";
  EXPECT_EQ(attributed("float32", "float32", 23).near_tie_threshold, 0.1);
  const ItemDivergence widened = attributed("float32", "bfloat16", 23);
  EXPECT_EQ(widened.attribution.kind, Attribution::kNearTie);
  EXPECT_DOUBLE_EQ(*widened.near_tie_threshold, bfloat16 + *margin_rounding_of("float32"));
  EXPECT_DOUBLE_EQ(*attributed("bfloat16", "bfloat16", 23).near_tie_threshold, 2 * bfloat16) << "both sides round";
  EXPECT_EQ(attributed("float32", "bfloat16", 22).attribution.kind, Attribution::kHard) << "2.3 nats is no rounding";

  ScoreSettings fixed;
  fixed.near_tie_by_dtype = false;
  EXPECT_EQ(attributed("float32", "bfloat16", 23, fixed).attribution.kind, Attribution::kHard)
      << "a threshold the user gives is not widened";
  EXPECT_EQ(attributed("float32", "bfloat16", 23, fixed).near_tie_threshold, 0.1);
}

TEST_F(ScorerTest, TheGateChecksEachThreshold) {
  ScoreSettings settings;
  settings.gate.min_exact = 0.5;
  settings.gate.min_partial = 0.8;
  const std::vector<std::string> reference = {tokens(1, "qa", "1, 2, 3, 4"), tokens(2, "qa", "1, 2, 3, 4")};
  const ScoreReport passing = score(reference, {tokens(1, "qa", "1, 2, 3, 4"), tokens(2, "qa", "1, 2, 3, 0")}, settings);
  EXPECT_TRUE(passing.gate.passed);
  EXPECT_TRUE(passing.gate.reasons.empty());
  const ScoreReport failing = score(reference, {tokens(1, "qa", "1, 2, 3, 4"), tokens(2, "qa", "1, 0")}, settings);
  EXPECT_FALSE(failing.gate.passed);
  ASSERT_EQ(failing.gate.reasons.size(), 1u);
  EXPECT_EQ(failing.gate.reasons[0], "partial match 0.625 is below --min-partial 0.8");
}

TEST_F(ScorerTest, AnIdAnsweredTwiceIsAnInputError) {
  EXPECT_EQ(error_for({tokens(1, "qa", "1"), tokens(2, "qa", "2")}, {tokens(1, "qa", "1"), tokens(2, "qa", "2"), tokens(1, "qa", "1")}),
            in_dir("candidate.jsonl") + ":3: field 'question_id': 1 is already used on line 1");
  EXPECT_EQ(error_for({tokens(1, "qa", "1"), tokens(1, "qa", "1")}, {tokens(1, "qa", "1")}),
            in_dir("reference.jsonl") + ":2: field 'question_id': 1 is already used on line 1");
}

TEST_F(ScorerTest, InputErrorsNameFileLineAndField) {
  EXPECT_EQ(error_for({tokens(1, "qa", "1")}, {tokens(1, "qa", "1"), R"({"question_id": 2, "token_ids": "no"})"}),
            in_dir("candidate.jsonl") + ":2: field 'token_ids': expected a list of token ids, got string");
  EXPECT_EQ(error_for({R"({"question_id": 1, "token_ids": [1]})"}, {text(1, "a")}),
            in_dir("candidate.jsonl") + ":1: question 1: nothing to compare: the candidate has only text, its reference (" +
                in_dir("reference.jsonl") + ":1) only token_ids");
  EXPECT_EQ(error_for({}, {tokens(1, "qa", "1")}),
            in_dir("reference.jsonl") + ": no answers (the reference must answer at least one question)");
  EXPECT_EQ(error_for({text(1, "a")}, {"{\"question_id\": 1, \"text\": \"\\ud800\"}"}),
            in_dir("candidate.jsonl") + ":1: invalid JSON at column 35: invalid \\u escape: a high surrogate without its low half");
}

TEST_F(ScorerTest, TheBenchGivesCategoriesToPlainAnswers) {
  const std::filesystem::path bench =
      write("bench.jsonl", {R"({"question_id": 1, "category": "translation", "turns": ["t"]})",
                            R"({"question_id": 2, "category": "math", "turns": ["m"]})"});
  const ScoreReport report =
      score_answers({.reference = write("reference.jsonl", {text(1, "a"), text(2, "b")}),
                     .candidate = write("candidate.jsonl", {text(1, "a"), text(2, "b")}),
                     .bench = bench});
  EXPECT_EQ(item_for(report, 1).subtask, "translation");
  EXPECT_EQ(item_for(report, 2).category, "math");
  EXPECT_EQ(item_for(report, 2).subtask, "mt_bench");
  ASSERT_TRUE(report.bench.has_value());
  EXPECT_EQ(report.bench->records, 2);
  EXPECT_TRUE(report.gate.passed);
  try {
    score_answers({.reference = write("reference.jsonl", {text(3, "a")}), .candidate = write("candidate.jsonl", {text(3, "a")}),
                   .bench = bench});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), in_dir("reference.jsonl") + ":1: field 'question_id': question 3 is not in " + bench.string());
  }
}

TEST_F(ScorerTest, AnEosIdKeptByOneSideOnlyIsNotADivergenceWhenTheEosIdsAreKnown) {
  const std::vector<std::string> reference = {tokens(1, "qa", "1, 2, 9"), tokens(2, "qa", "1, 2"), tokens(3, "qa", "4, 9")};
  const std::vector<std::string> candidate = {tokens(1, "qa", "1, 2"), tokens(2, "qa", "1, 2, 8"), tokens(3, "qa", "4, 9, 5")};
  const ScoreReport unknown = score(reference, candidate);
  EXPECT_EQ(unknown.overall.exact, 0);
  EXPECT_EQ(unknown.reference_ended_with_eos, 0);

  ScoreSettings settings;
  settings.eos_ids = {8, 9};
  const ScoreReport known = score(reference, candidate, settings);
  EXPECT_TRUE(item_for(known, 1).comparison.exact);
  EXPECT_EQ(item_for(known, 1).comparison.reference_length, 2);
  EXPECT_TRUE(item_for(known, 2).comparison.exact);
  // Generating past an EOS is still a divergence, at the EOS.
  ASSERT_FALSE(item_for(known, 3).comparison.exact);
  EXPECT_EQ(item_for(known, 3).divergence->where.index, 2);
  EXPECT_EQ(known.reference_ended_with_eos, 2);
  EXPECT_EQ(known.candidate_ended_with_eos, 1);
}

TEST_F(ScorerTest, ATokenizerDecodesTheTextAroundEachDivergence) {
  const ByteTokenizer tokenizer;
  const std::filesystem::path reference = write("reference.jsonl", {tokens(1, "qa", "104, 105, 33, 10")});
  const std::filesystem::path candidate = write("candidate.jsonl", {tokens(1, "qa", "104, 105, 63")});
  const ScoreReport report = score_answers({.reference = reference, .candidate = candidate, .tokenizer = &tokenizer});
  const ItemDivergence& d = *item_for(report, 1).divergence;
  ASSERT_TRUE(d.text.has_value());
  EXPECT_EQ(d.text->before, "hi");
  EXPECT_EQ(d.text->reference_after, "!\n");
  EXPECT_EQ(d.text->candidate_after, "?");
  EXPECT_FALSE(score({tokens(1, "qa", "1")}, {tokens(1, "qa", "2")}).items[0].divergence->text.has_value());
}

}  // namespace
}  // namespace specgate
