#include <cstdint>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impl/bench/answer.h"
#include "impl/common/error.h"
#include "impl/scoring/answer_reader.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

AnswerRecord parse(const std::string& line, TurnScope scope = TurnScope::kAll) {
  return parse_answer_line(line, "a.jsonl", 7, scope);
}

std::string error_for(const std::string& line) {
  try {
    parse(line);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// What recorded_alternatives() says of the first token of `line`'s first turn.
std::string alternatives_error_for(const std::string& line) {
  try {
    recorded_alternatives(line, "a.jsonl", 7, 0, 0);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

constexpr const char* kSpecBench =
    R"({"question_id": 81, "answer_id": "x", "model_id": "m", "category": "writing", "tstamp": 1.5,)"
    R"( "choices": [{"index": 0, "turns": ["Hi", "Bye"], "decoding_steps": [2, 1], "new_tokens": [2, 1],)"
    R"( "wall_time": [0.1, 0.2], "accept_lengths": [1, 1, 1]}]})";

TEST(AnswerLine, ReadsTheSpecBenchForm) {
  const AnswerRecord record = parse(kSpecBench);
  EXPECT_EQ(record.question_id, 81);
  EXPECT_EQ(record.category, "writing");
  EXPECT_EQ(record.texts, (std::vector<std::string>{"Hi", "Bye"}));
  EXPECT_FALSE(record.token_ids.has_value());
  EXPECT_FALSE(record.has_top_logprobs);
  EXPECT_FALSE(record.plain_form);
  EXPECT_EQ(record.line, 7);
  EXPECT_EQ(parse(kSpecBench, TurnScope::kFirst).texts, std::vector<std::string>{"Hi"});
}

TEST(AnswerLine, SumsTheSpeedFieldsOverTheScoredTurns) {
  const AnswerSpeed all = parse(kSpecBench).speed;
  EXPECT_DOUBLE_EQ(all.wall_time.value(), 0.1 + 0.2);
  EXPECT_EQ(all.new_tokens, 3);
  EXPECT_EQ(all.decoding_steps, 3);
  EXPECT_EQ(all.accept_steps, 3);
  EXPECT_EQ(all.accepted_tokens, 3);
  EXPECT_FALSE(all.drafted_tokens.has_value());
  const AnswerSpeed first = parse(kSpecBench, TurnScope::kFirst).speed;
  EXPECT_DOUBLE_EQ(first.wall_time.value(), 0.1);
  EXPECT_EQ(first.new_tokens, 2);
  EXPECT_EQ(first.accept_steps, 0) << "a flat accept_lengths of two turns cannot be split";
}

TEST(AnswerLine, ReadsAcceptLengthsPerTurnAndDraftCounts) {
  const std::string line =
      R"({"question_id": 4, "choices": [{"turns": ["ab", "c"], "token_ids": [[1, 2, 3, 4, 5], [6, 7]],)"
      R"( "accept_lengths": [[3, 2], [2]], "drafted_tokens": [8, 4], "accepted_drafts": [3, 1]}]})";
  const AnswerSpeed all = parse(line).speed;
  EXPECT_EQ(all.new_tokens, 7) << "new_tokens defaults to the length of token_ids";
  EXPECT_EQ(all.accept_steps, 3);
  EXPECT_EQ(all.accepted_tokens, 7);
  EXPECT_EQ(all.drafted_tokens, 12);
  EXPECT_EQ(all.accepted_drafts, 4);
  const AnswerSpeed first = parse(line, TurnScope::kFirst).speed;
  EXPECT_EQ(first.new_tokens, 5);
  EXPECT_EQ(first.accept_steps, 2);
  EXPECT_EQ(first.accepted_tokens, 5);
  EXPECT_EQ(first.drafted_tokens, 8);
  EXPECT_FALSE(parse(R"({"question_id": 1, "text": "a"})").speed.wall_time.has_value());
}

// round_drafts: what each round verified, where a server reports it (vLLM's per_step_drafted).
TEST(AnswerLine, ReadsEachRoundsDraftsBesideItsAcceptLength) {
  const std::string line =
      R"({"question_id": 4, "choices": [{"turns": ["ab"], "token_ids": [[1, 2, 3, 4, 5]],)"
      R"( "accept_lengths": [3, 1], "round_drafts": [[4, 2]]}]})";
  EXPECT_EQ(parse(line).speed.round_drafts, (std::vector<std::vector<int64_t>>{{4, 2}}));
  EXPECT_FALSE(parse(R"({"question_id": 1, "choices": [{"turns": ["a"], "accept_lengths": [1]}]})").speed.round_drafts);
  EXPECT_EQ(parse(R"({"question_id": 1, "choices": [{"turns": ["a"], "accept_lengths": [[]], "round_drafts": [[]]}]})")
                .speed.round_drafts,
            (std::vector<std::vector<int64_t>>{{}}))
      << "a server that verified no drafts in this answer";
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "accept_lengths": [1, 2], "round_drafts": [[4]]}]})"),
            "a.jsonl:7: field 'choices[0].round_drafts[0]': has 1 entries for 2 of accept_lengths");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "accept_lengths": [4], "round_drafts": [[2]]}]})"),
            "a.jsonl:7: field 'choices[0].round_drafts[0][0]': 2 drafts, yet the step appended 4 tokens");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "round_drafts": [[2]]}]})"),
            "a.jsonl:7: field 'choices[0].round_drafts': needs accept_lengths, one list per turn");
}

TEST(AnswerLine, RefusesMalformedSpeedFields) {
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a", "b"], "accept_lengths": [[1], 2]}]})"),
            "a.jsonl:7: field 'choices[0].accept_lengths[1]': expected a list (the list's first entry is one), got number 2");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "accept_lengths": [[1], [2]]}]})"),
            "a.jsonl:7: field 'choices[0].accept_lengths': has 2 lists for 1 turns");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "new_tokens": [-1]}]})"),
            "a.jsonl:7: field 'choices[0].new_tokens[0]': expected a non-negative integer, got number -1");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "wall_time": [-0.5]}]})"),
            "a.jsonl:7: field 'choices[0].wall_time[0]': expected a number of seconds >= 0, got -0.5");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "drafted_tokens": [2], "accepted_drafts": [3]}]})"),
            "a.jsonl:7: field 'choices[0].accepted_drafts': more accepted drafts (3) than drafted_tokens (2)");
}

TEST(AnswerLine, WrittenAnswersReadBackWithOnlyTheFiguresTheyHave) {
  Answer with_ids{.question_id = 5, .category = "qa"};
  with_ids.turns.push_back({.text = "ab", .token_ids = {97, 98}, .prompt_token_ids = {1, 2}, .decoding_steps = 1,
                            .wall_time = 0.5, .accept_lengths = {2}, .drafted_tokens = 3, .accepted_drafts = 1});
  std::ostringstream line;
  write_answer_line(line, with_ids);
  const AnswerRecord read = parse(line.str());
  EXPECT_EQ(read.token_ids, (std::vector<std::vector<int64_t>>{{97, 98}}));
  EXPECT_EQ(read.speed.new_tokens, 2);
  EXPECT_EQ(read.speed.decoding_steps, 1);
  EXPECT_EQ(read.speed.accepted_tokens, 2);
  EXPECT_EQ(read.speed.drafted_tokens, 3);
  EXPECT_EQ(read.speed.accepted_drafts, 1);
  EXPECT_NE(line.str().find(R"("prompt_token_ids":[[1,2]])"), std::string::npos) << line.str();

  Answer text_only{.question_id = 6, .has_token_ids = false};
  text_only.turns.push_back({.text = "ab", .wall_time = 0.5});
  std::ostringstream text_line;
  write_answer_line(text_line, text_only);
  const AnswerRecord text_read = parse(text_line.str());
  EXPECT_FALSE(text_read.token_ids.has_value()) << "no token_ids: an empty list would be compared as ids";
  EXPECT_FALSE(text_read.speed.new_tokens.has_value()) << "unknown, not 0";
  EXPECT_FALSE(text_read.speed.decoding_steps.has_value());
  EXPECT_EQ(text_line.str().find("prompt_token_ids"), std::string::npos);

  // A server's listed rounds go one list per turn, a turn without any an empty one.
  Answer listed{.question_id = 7};
  listed.turns.push_back({.text = "ab", .token_ids = {97, 98, 99}, .accept_lengths = {2}, .round_drafts = std::vector<int64_t>{4}});
  listed.turns.push_back({.text = "c", .token_ids = {99}, .round_drafts = std::vector<int64_t>{}});
  std::ostringstream listed_line;
  write_answer_line(listed_line, listed);
  const AnswerRecord listed_read = parse(listed_line.str());
  EXPECT_EQ(listed_read.speed.accept_lengths, (std::vector<std::vector<int64_t>>{{2}, {}})) << listed_line.str();
  EXPECT_EQ(listed_read.speed.round_drafts, (std::vector<std::vector<int64_t>>{{4}, {}})) << listed_line.str();
}

TEST(AnswerLine, StreamedTurnsRoundTripAndAreReadPerScoredTurn) {
  Answer answer{.question_id = 9};
  answer.turns.push_back({.text = "abcd", .token_ids = {1, 2, 3, 4}, .stream = StreamRecord{{0.5, 0.75, 1.0}, {1, 2, 1}}});
  answer.turns.push_back({.text = "e", .token_ids = {5}, .stream = StreamRecord{{0.25}, {1}}});
  std::ostringstream line;
  write_answer_line(line, answer);
  for (const char* field : {R"("chunk_seconds":[[0.5,0.75,1.0],[0.25]])", R"("chunk_tokens":[[1,2,1],[1]])"})
    EXPECT_NE(line.str().find(field), std::string::npos) << line.str();
  const AnswerSpeed all = parse(line.str()).speed;
  ASSERT_TRUE(all.streams.has_value());
  EXPECT_EQ((*all.streams)[0].chunk_tokens, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(parse(line.str(), TurnScope::kFirst).speed.streams->size(), 1u);

  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "chunk_seconds": [[0.5, 0.25]]}]})"),
            "a.jsonl:7: field 'choices[0].chunk_seconds[0]': goes back in time: chunks are listed in the order they came");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "chunk_seconds": [[0.5]], "chunk_tokens": [[1, 2]]}]})"),
            "a.jsonl:7: field 'choices[0].chunk_tokens[0]': needs one count per entry of chunk_seconds");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "chunk_tokens": [[1]]}]})"),
            "a.jsonl:7: field 'choices[0].chunk_tokens': needs chunk_seconds");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "chunk_seconds": [0.5]}]})"),
            "a.jsonl:7: field 'choices[0].chunk_seconds[0]': expected a list with one entry per chunk, got number 0.5");
}

TEST(AnswerLine, CoverageCountsRoundTripAndAreSummedOverTheScoredTurns) {
  Answer answer{.question_id = 8};
  answer.turns.push_back({.text = "a", .token_ids = {1}, .coverage = AnswerTurn::Coverage{3, 5, true}});
  answer.turns.push_back({.text = "b", .token_ids = {2}, .coverage = AnswerTurn::Coverage{1, 2, false}});
  std::ostringstream line;
  write_answer_line(line, answer);
  for (const char* field : {R"("ragged_rounds":[3,1])", R"("realignments":[5,2])", R"("finished_early":[true,false])"})
    EXPECT_NE(line.str().find(field), std::string::npos) << line.str();
  const AnswerSpeed all = parse(line.str()).speed;
  EXPECT_EQ(all.ragged_rounds, 4);
  EXPECT_EQ(all.realignments, 7);
  EXPECT_EQ(all.finished_early, 1);
  EXPECT_EQ(parse(line.str(), TurnScope::kFirst).speed.realignments, 5);

  Answer without{.question_id = 9};
  without.turns.push_back({.text = "a", .token_ids = {1}});
  std::ostringstream bare;
  write_answer_line(bare, without);
  EXPECT_FALSE(parse(bare.str()).speed.realignments.has_value()) << "unknown, not 0";
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "finished_early": [1]}]})"),
            "a.jsonl:7: field 'choices[0].finished_early[0]': expected true or false, got number 1");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "realignments": [-2]}]})"),
            "a.jsonl:7: field 'choices[0].realignments[0]': expected a non-negative integer, got number -2");
}

TEST(AnswerLine, ReadsTheTokenLevelExtension) {
  const std::string line =
      R"({"question_id": 3, "choices": [{"turns": ["ab", "c"], "token_ids": [[97, 98], [99]],)"
      R"( "top_logprobs": [[[{"token_id": 97, "logprob": -0.1}], [{"token_id": 98, "logprob": -0.2}]],)"
      R"( [[{"token_id": 99, "logprob": -0.3}, {"token_id": 5, "logprob": -2}]]]}]})";
  const AnswerRecord record = parse(line);
  EXPECT_EQ(record.token_ids, (std::vector<std::vector<int64_t>>{{97, 98}, {99}}));
  EXPECT_TRUE(record.has_top_logprobs);
  const std::vector<TokenLogprob> alternatives = recorded_alternatives(line, "a.jsonl", 7, 1, 0);
  ASSERT_EQ(alternatives.size(), 2u);
  EXPECT_EQ(alternatives[1].token_id, 5);
  EXPECT_DOUBLE_EQ(alternatives[1].logprob, -2.0);
  EXPECT_DOUBLE_EQ(recorded_alternatives(line, "a.jsonl", 7, 0, 1).at(0).logprob, -0.2);
}

TEST(AnswerLine, ReadsThePlainForm) {
  const AnswerRecord ids = parse(R"({"question_id": 5, "token_ids": [1, 2, 3]})");
  EXPECT_TRUE(ids.plain_form);
  EXPECT_EQ(ids.token_ids, (std::vector<std::vector<int64_t>>{{1, 2, 3}}));
  EXPECT_FALSE(ids.texts.has_value());
  const AnswerRecord text = parse(R"({"question_id": 5, "text": "caf\u00e9 \ud83d\ude00"})");
  EXPECT_EQ(text.texts, std::vector<std::string>{"caf\xC3\xA9 \xF0\x9F\x98\x80"});
  const std::string with_logprobs = R"({"question_id": 5, "token_ids": [4], "top_logprobs": [[{"token_id": 4, "logprob": 0}]]})";
  EXPECT_TRUE(parse(with_logprobs).has_top_logprobs);
  EXPECT_EQ(recorded_alternatives(with_logprobs, "a.jsonl", 7, 0, 0).at(0).token_id, 4);
}

TEST(AnswerLine, MalformedJsonNamesFileLineAndColumn) {
  EXPECT_EQ(error_for(R"({"question_id": 1, "text": "a")"), "a.jsonl:7: invalid JSON at column 31: expected '}', got the end of the line");
  EXPECT_EQ(error_for(R"({"question_id": 1,, "text": "a"})"), "a.jsonl:7: invalid JSON at column 19: expected a key, got ','");
  EXPECT_EQ(error_for(R"({"question_id": 1, "text": "a"} x)"), "a.jsonl:7: invalid JSON at column 33: unexpected 'x' after the end of the value");
  EXPECT_EQ(error_for(R"([1, 2])"), "a.jsonl:7: expected a JSON object, got list");
  EXPECT_EQ(error_for("{\"question_id\": 1, \"text\": \"a\xFF\"}"), "a.jsonl:7: invalid JSON at column 30: invalid UTF-8 in a string");
}

TEST(AnswerLine, WrongTypesNameTheField) {
  EXPECT_EQ(error_for(R"({"question_id": "1", "text": "a"})"), "a.jsonl:7: field 'question_id': expected an integer, got string");
  EXPECT_EQ(error_for(R"({"question_id": 1.5, "text": "a"})"), "a.jsonl:7: field 'question_id': expected an integer, got number 1.5");
  EXPECT_EQ(error_for(R"({"question_id": 1, "token_ids": [1, -2]})"),
            "a.jsonl:7: field 'token_ids[1]': expected a token id (a non-negative integer), got number -2");
  EXPECT_EQ(error_for(R"({"question_id": 1, "text": 4})"), "a.jsonl:7: field 'text': expected a string, got number 4");
  EXPECT_EQ(error_for(R"({"question_id": 1, "category": true, "text": "a"})"),
            "a.jsonl:7: field 'category': expected a string, got boolean true");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": {}})"), "a.jsonl:7: field 'choices': expected a list, got object");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a", 2]}]})"),
            "a.jsonl:7: field 'choices[0].turns[1]': expected a string, got number 2");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "token_ids": [[1], [2]]}]})"),
            "a.jsonl:7: field 'choices[0].token_ids': has 2 lists for 1 turns");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "wall_time": ["x"]}]})"),
            "a.jsonl:7: field 'choices[0].wall_time[0]': expected a number, got string");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"turns": ["a"], "token_ids": [[1, 2]], "top_logprobs": [[[]]]}]})"),
            "a.jsonl:7: field 'choices[0].top_logprobs[0]': has 1 entries for 2 token ids");
}

TEST(AnswerLine, NumbersBeyondRangeAreRefusedNotThrown) {
  EXPECT_EQ(error_for(R"({"question_id": 1e400, "text": "a"})"), "a.jsonl:7: invalid JSON at column 17: number overflow parsing '1e400'");
  EXPECT_EQ(error_for(R"({"question_id": 1, "token_ids": [9223372036854775808]})"),
            "a.jsonl:7: field 'token_ids[0]': 9223372036854775808 is out of range");
  EXPECT_EQ(error_for(R"({"question_id": 1, "token_ids": [1e30]})"),
            "a.jsonl:7: field 'token_ids[0]': expected a token id (a non-negative integer), got number 1e+30");
  const std::string line = R"({"question_id": 1, "token_ids": [4], "top_logprobs": [[{"token_id": 4, "logprob": -1e400}]]})";
  EXPECT_TRUE(parse(line).has_top_logprobs);
  EXPECT_EQ(alternatives_error_for(line), "a.jsonl:7: invalid JSON at column 83: number overflow parsing '-1e400'");
  // Columns count in the line as written, before the reader sets top_logprobs aside.
  EXPECT_EQ(error_for(R"({"top_logprobs": [[{"token_id": 4, "logprob": -1}]], "question_id": 1e400})"),
            "a.jsonl:7: invalid JSON at column 69: number overflow parsing '1e400'");
}

TEST(AnswerLine, UnusedBookkeepingOfAnyShapeIsIgnoredWithOneWarningPerFieldAndFile) {
  const std::string line = R"({"question_id": 1, "answer_id": 5, "model_id": ["m"], "tstamp": "2024-01-01",)"
                           R"( "choices": [{"index": "0", "turns": ["a"]}]})";
  testing::internal::CaptureStderr();
  const AnswerRecord first = parse_answer_line(line, "warn.jsonl", 1, TurnScope::kAll);
  parse_answer_line(line, "warn.jsonl", 2, TurnScope::kAll);
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(first.texts, std::vector<std::string>{"a"});
  const std::string ignored = "; ignored (not reported again for this file)\n";
  EXPECT_EQ(warnings, "warning: warn.jsonl:1: field 'answer_id': expected a string, got number 5" + ignored +
                          "warning: warn.jsonl:1: field 'model_id': expected a string, got list" + ignored +
                          "warning: warn.jsonl:1: field 'tstamp': expected a number, got string" + ignored +
                          "warning: warn.jsonl:1: field 'choices[0].index': expected an integer, got string" + ignored);
}

TEST(AnswerLine, MissingFieldsAreNamed) {
  EXPECT_EQ(error_for(R"({"text": "a"})"), "a.jsonl:7: field 'question_id': missing");
  EXPECT_EQ(error_for(R"({"question_id": 1})"),
            "a.jsonl:7: field 'token_ids': missing (a plain answer has token_ids and/or text; a Spec-Bench answer has choices)");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": [{"index": 0}]})"), "a.jsonl:7: field 'choices[0].turns': missing");
  EXPECT_EQ(error_for(R"({"question_id": 1, "choices": []})"),
            "a.jsonl:7: field 'choices': expected at least one choice, got an empty list");
  EXPECT_EQ(error_for(R"({"question_id": 1, "text": "a", "top_logprobs": []})"),
            "a.jsonl:7: field 'top_logprobs': needs token_ids (log-probabilities are per token)");
}

TEST(AnswerLine, MalformedAlternativesAreReportedWhenRead) {
  const std::string line = R"({"question_id": 1, "token_ids": [4], "top_logprobs": [[{"token_id": 4}]]})";
  EXPECT_TRUE(parse(line).has_top_logprobs);
  EXPECT_EQ(alternatives_error_for(line), "a.jsonl:7: field 'top_logprobs[0][0].logprob': missing");
  // A value above 0 is no log-probability: it would make every alternative look as likely.
  EXPECT_EQ(alternatives_error_for(R"({"question_id": 1, "token_ids": [4], "top_logprobs": [[{"token_id": 4, "logprob": 5.0}]]})"),
            "a.jsonl:7: field 'top_logprobs[0][0].logprob': log-probability 5.0 is above 0");
  const std::string rounded = R"({"question_id": 1, "token_ids": [4], "top_logprobs": [[{"token_id": 4, "logprob": 2e-7}]]})";
  EXPECT_DOUBLE_EQ(recorded_alternatives(rounded, "a.jsonl", 7, 0, 0).at(0).logprob, 2e-7);
}

class AnswerFileTest : public TempFolderTest {};

TEST_F(AnswerFileTest, ReadsLinesWithOffsetsSkippingBlankOnesAndHashesTheFile) {
  const std::filesystem::path path = dir_ / "answers.jsonl";
  const std::string first = R"({"question_id": 1, "text": "a"})";
  std::ofstream(path, std::ios::binary) << first << "\r\n\n  \n" << R"({"question_id": 2, "token_ids": []})";
  AnswerReader reader(path, TurnScope::kAll);
  const auto one = reader.next();
  const auto two = reader.next();
  ASSERT_TRUE(one && two);
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_EQ(one->line, 1);
  EXPECT_EQ(one->offset, 0u);
  EXPECT_EQ(two->line, 4);
  EXPECT_EQ(two->offset, first.size() + 6);
  EXPECT_EQ(reader.answers(), 2);
  EXPECT_EQ(reader.bytes(), std::filesystem::file_size(path));
  EXPECT_EQ(reader.sha256().size(), 64u);
  EXPECT_EQ(read_line_at(path, two->offset), R"({"question_id": 2, "token_ids": []})");
}

TEST_F(AnswerFileTest, CountsTheAnswersItWouldReadAcrossFiles) {
  const std::filesystem::path a = dir_ / "a.jsonl", b = dir_ / "b.jsonl";
  std::ofstream(a, std::ios::binary) << R"({"question_id": 1, "text": "a"})" << "\r\n\n  \n" << R"({"question_id": 2, "text": "b"})";
  std::ofstream(b, std::ios::binary) << R"({"question_id": 3, "text": "c"})" << "\n";
  const std::vector<std::filesystem::path> files = {a, b, dir_ / "missing.jsonl"};
  EXPECT_EQ(count_answers(files), 3);
  int64_t read = 0;
  for (const std::filesystem::path& file : std::span(files).first(2)) {
    AnswerReader reader(file, TurnScope::kAll);
    while (reader.next()) ++read;
  }
  EXPECT_EQ(read, 3);
}

TEST_F(AnswerFileTest, Sha256MatchesAKnownDigest) {
  const std::filesystem::path path = dir_ / "abc.jsonl";
  std::ofstream(path, std::ios::binary) << "abc";
  EXPECT_EQ(sha256_file(path), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  LineReader reader(path);
  std::string line;
  while (reader.next(line)) {
  }
  EXPECT_EQ(reader.sha256(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(AnswerFileTest, AByteOrderMarkBeforeTheFirstLineIsSkipped) {
  const std::filesystem::path path = dir_ / "bom.jsonl";
  std::ofstream(path, std::ios::binary) << "\xEF\xBB\xBF" R"({"question_id": 1, "token_ids": [4]})" "\n";
  AnswerReader reader(path, TurnScope::kAll);
  const auto one = reader.next();
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->question_id, 1);
  EXPECT_EQ(read_line_at(path, one->offset), R"({"question_id": 1, "token_ids": [4]})");
}

TEST_F(AnswerFileTest, ALineLongerThanTheCapIsRefusedBeforeItIsWhole) {
  const std::filesystem::path path = dir_ / "long.jsonl";
  std::ofstream(path, std::ios::binary) << "{}\n" << std::string(kMaxLineBytes + (2 << 20), ' ') << "\n";
  LineReader reader(path);
  std::string line;
  ASSERT_TRUE(reader.next(line));
  try {
    reader.next(line);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("long.jsonl:2: the line is longer than 16 MiB"), std::string::npos) << e.what();
    EXPECT_LE(line.size(), kMaxLineBytes + (1 << 20)) << "read further than one block past the cap";
  }
}

TEST_F(AnswerFileTest, MissingFilesAndFoldersAreInputErrors) {
  EXPECT_THROW(AnswerReader(dir_ / "nope.jsonl", TurnScope::kAll), InputError);
  try {
    AnswerReader reader(dir_, TurnScope::kAll);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file (a folder)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace specgate
