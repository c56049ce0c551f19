#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "impl/bench/question.h"
#include "impl/common/error.h"

namespace specgate {
namespace {

std::string read_error(const std::string& text) {
  std::istringstream in(text);
  try {
    read_questions(in, "bench.jsonl");
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

std::map<std::string, int> questions_per_subtask(const std::vector<Question>& questions) {
  std::map<std::string, int> counts;
  for (const Question& q : questions) ++counts[subtask_of(q.category)];
  return counts;
}

TEST(BenchQuestion, TheRealSpecBenchFileParses) {
  const std::vector<Question> questions = read_questions(std::filesystem::path(SPECGATE_SPECBENCH_QUESTIONS));
  ASSERT_EQ(questions.size(), 480u);
  const std::map<std::string, int> expected = {{"mt_bench", 80},    {"translation", 80}, {"summarization", 80},
                                               {"qa", 80},          {"math_reasoning", 80}, {"rag", 80}};
  EXPECT_EQ(questions_per_subtask(questions), expected);
  EXPECT_EQ(questions.front().question_id, 81);
  EXPECT_EQ(questions.back().question_id, 560);
  for (const Question& q : questions) EXPECT_EQ(q.turns.size(), subtask_of(q.category) == "mt_bench" ? 2u : 1u);
}

TEST(BenchQuestion, TheSampleCoversEverySubtaskWithShortAndLongPrompts) {
  const std::vector<Question> questions = read_questions(std::filesystem::path(SPECGATE_SAMPLE_BENCH));
  EXPECT_EQ(questions.size(), 30u);
  EXPECT_EQ(questions_per_subtask(questions).size(), 6u);
  size_t shortest = SIZE_MAX, longest = 0;
  for (const Question& q : questions) {
    shortest = std::min(shortest, q.turns.front().size());
    longest = std::max(longest, q.turns.front().size());
  }
  EXPECT_LT(shortest, 80u);
  EXPECT_GT(longest, 1500u);
}

TEST(BenchQuestion, SubtasksFollowSpecBench) {
  for (const char* mt : {"writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"})
    EXPECT_EQ(subtask_of(mt), "mt_bench");
  for (const char* own : {"translation", "summarization", "qa", "math_reasoning", "rag", "something_else"})
    EXPECT_EQ(subtask_of(own), own);
}

TEST(BenchQuestion, AcceptsBlankLinesCrlfAndAMissingFinalNewline) {
  std::istringstream in(
      "{\"question_id\": 1, \"category\": \"qa\", \"turns\": [\"a\"], \"extra\": 3}\r\n\r\n"
      "{\"question_id\": 2, \"category\": \"rag\", \"turns\": [\"b\", \"c\"], \"reference\": [\"r\"]}");
  const std::vector<Question> questions = read_questions(in, "x");
  ASSERT_EQ(questions.size(), 2u);
  EXPECT_EQ(questions[1].turns, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(questions[1].reference, (std::vector<std::string>{"r"}));
}

TEST(BenchQuestion, EveryErrorNamesFileLineAndField) {
  const std::string ok = "{\"question_id\": 1, \"category\": \"qa\", \"turns\": [\"a\"]}\n";
  EXPECT_EQ(read_error(ok + "{not json\n"), "bench.jsonl:2: not valid JSON");
  EXPECT_EQ(read_error("[1, 2]\n"), "bench.jsonl:1: expected a JSON object, got array");
  EXPECT_EQ(read_error("{\"category\": \"qa\", \"turns\": [\"a\"]}"), "bench.jsonl:1: field 'question_id': missing");
  EXPECT_EQ(read_error("{\"question_id\": \"7\", \"category\": \"qa\", \"turns\": [\"a\"]}"),
            "bench.jsonl:1: field 'question_id': expected an integer, got string");
  EXPECT_EQ(read_error("{\"question_id\": 7, \"category\": 3, \"turns\": [\"a\"]}"),
            "bench.jsonl:1: field 'category': expected a string, got number");
  EXPECT_EQ(read_error("{\"question_id\": 7, \"category\": \"qa\", \"turns\": \"a\"}"),
            "bench.jsonl:1: field 'turns': expected a list of strings, got string");
  EXPECT_EQ(read_error("{\"question_id\": 7, \"category\": \"qa\", \"turns\": [\"a\", 2]}"),
            "bench.jsonl:1: field 'turns[1]': expected a string, got number");
  EXPECT_EQ(read_error("{\"question_id\": 7, \"category\": \"qa\", \"turns\": []}"), "bench.jsonl:1: field 'turns': empty");
  EXPECT_EQ(read_error("{\"question_id\": 7, \"category\": \"qa\", \"turns\": [\"a\"], \"reference\": \"r\"}"),
            "bench.jsonl:1: field 'reference': expected a list, got string");
  EXPECT_EQ(read_error(ok + "\n" + ok), "bench.jsonl:3: field 'question_id': 1 already on line 1");
}

TEST(BenchQuestion, MissingFileIsAnInputError) {
  EXPECT_THROW(read_questions(std::filesystem::path("/nonexistent/questions.jsonl")), InputError);
}

}  // namespace
}  // namespace specgate
