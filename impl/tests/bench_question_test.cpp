#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <map>
#include <set>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "impl/bench/question.h"
#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

std::map<std::string, int> questions_per_subtask(const std::vector<Question>& questions) {
  std::map<std::string, int> counts;
  for (const Question& q : questions) ++counts[subtask_of(q.category)];
  return counts;
}

std::set<int64_t> ids_of(const std::vector<Question>& questions) {
  std::set<int64_t> ids;
  for (const Question& q : questions) ids.insert(q.question_id);
  return ids;
}

const Question& question_with_id(const std::vector<Question>& questions, int64_t id) {
  for (const Question& q : questions) {
    if (q.question_id == id) return q;
  }
  throw std::out_of_range("no question " + std::to_string(id));
}

TEST(BenchQuestion, TheRealSpecBenchFileParses) {
  const std::vector<Question> questions = read_questions(SPECGATE_SPECBENCH_QUESTIONS);
  ASSERT_EQ(questions.size(), 480u);
  const std::map<std::string, int> expected = {{"mt_bench", 80}, {"translation", 80},    {"summarization", 80},
                                               {"qa", 80},       {"math_reasoning", 80}, {"rag", 80}};
  EXPECT_EQ(questions_per_subtask(questions), expected);
  const std::set<int64_t> ids = ids_of(questions);
  EXPECT_EQ(ids.size(), 480u);
  EXPECT_EQ(*ids.begin(), 81);
  EXPECT_EQ(*ids.rbegin(), 560);
  for (const Question& q : questions) {
    EXPECT_EQ(q.turns.size(), subtask_of(q.category) == "mt_bench" ? 2u : 1u) << "question " << q.question_id;
    if (q.category == "rag") {
      EXPECT_FALSE(q.reference.empty()) << "question " << q.question_id;
    }
  }
}

TEST(BenchQuestion, TheSampleCoversEverySubtaskWithShortAndLongPrompts) {
  const std::vector<Question> questions = read_questions(SPECGATE_SAMPLE_BENCH);
  ASSERT_EQ(questions.size(), 30u);
  const std::map<std::string, int> expected = {{"mt_bench", 8}, {"translation", 4},    {"summarization", 5},
                                               {"qa", 5},       {"math_reasoning", 4}, {"rag", 4}};
  EXPECT_EQ(questions_per_subtask(questions), expected);
  const std::set<int64_t> ids = ids_of(questions);
  EXPECT_EQ(ids.size(), 30u);
  EXPECT_EQ(*ids.begin(), 1);
  EXPECT_EQ(*ids.rbegin(), 30);

  size_t shortest = SIZE_MAX, longest = 0;
  for (const Question& q : questions) {
    EXPECT_EQ(q.turns.size(), subtask_of(q.category) == "mt_bench" ? 2u : 1u) << "question " << q.question_id;
    shortest = std::min(shortest, q.turns.front().size());
    longest = std::max(longest, q.turns.front().size());
  }
  EXPECT_LT(shortest, 80u);
  EXPECT_GT(longest, 2000u);
}

TEST(BenchQuestion, TheSampleDecodesEscapesAndFlattensRagReferences) {
  const std::vector<Question> questions = read_questions(SPECGATE_SAMPLE_BENCH);
  EXPECT_NE(question_with_id(questions, 9).turns.front().find("B\xc3\xa4" "ckerei"), std::string::npos);
  EXPECT_EQ(question_with_id(questions, 28).reference, (std::vector<std::string>{"Arthur Pell", "Henry Pell"}));
  EXPECT_TRUE(question_with_id(questions, 18).reference.empty());
}

TEST(BenchQuestion, SubtasksFollowSpecBench) {
  for (const char* category : {"writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"})
    EXPECT_EQ(subtask_of(category), "mt_bench") << category;
  for (const char* category : {"translation", "summarization", "qa", "math_reasoning", "rag", "something_else"})
    EXPECT_EQ(subtask_of(category), category);
}

// A stream that delivers `text` and then fails, like a file on a failing disk.
class FailingBuffer : public std::streambuf {
 public:
  explicit FailingBuffer(std::string text) : text_(std::move(text)) {
    setg(text_.data(), text_.data(), text_.data() + text_.size());
  }

 private:
  int_type underflow() override { throw std::ios_base::failure("device error"); }

  std::string text_;
};

TEST(BenchQuestion, AReadErrorNamesTheSourceAndTheLastLineRead) {
  FailingBuffer buffer(R"({"question_id": 1, "category": "qa", "turns": ["a"]})" "\n");
  std::istream in(&buffer);
  try {
    read_questions(in, "stream");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "stream: read error after line 1");
  }
}

class BenchQuestionFileTest : public TempFolderTest {
 protected:
  std::filesystem::path write(const std::string& text) {
    const std::filesystem::path path = dir_ / "bench.jsonl";
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // The message read_questions throws for a file holding `text`.
  std::string error_for(const std::string& text) { return error_reading(write(text)); }

  std::string error_reading(const std::filesystem::path& path) {
    try {
      read_questions(path);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error reading " << path;
    return "";
  }

  // "<dir>/bench.jsonl:<line>: "
  std::string at(int line) const { return (dir_ / "bench.jsonl").string() + ":" + std::to_string(line) + ": "; }
};

constexpr char kGood[] = R"({"question_id": 1, "category": "qa", "turns": ["a"]})";

TEST_F(BenchQuestionFileTest, AcceptsBlankLinesCrlfExtraFieldsAndNoFinalNewline) {
  const std::vector<Question> questions = read_questions(write(
      "\r\n"
      R"({"question_id": 7, "category": "qa", "turns": ["a"], "extra": {"x": 3}})" "\r\n"
      "  \t\r\n"
      R"({"question_id": 3, "category": "writing", "turns": ["b", "c\r\nd"], "reference": ["r", ["s", "t"]]})"));
  ASSERT_EQ(questions.size(), 2u);
  EXPECT_EQ(questions[0].question_id, 7);
  EXPECT_EQ(questions[0].category, "qa");
  EXPECT_EQ(questions[0].turns, std::vector<std::string>{"a"});
  EXPECT_TRUE(questions[0].reference.empty());
  EXPECT_EQ(questions[1].question_id, 3);
  EXPECT_EQ(questions[1].turns, (std::vector<std::string>{"b", "c\r\nd"}));
  EXPECT_EQ(questions[1].reference, (std::vector<std::string>{"r", "s", "t"}));
}

TEST_F(BenchQuestionFileTest, AnEmptyFileHoldsNoQuestions) { EXPECT_TRUE(read_questions(write("\n\n")).empty()); }

TEST_F(BenchQuestionFileTest, AMissingFileIsNamed) {
  EXPECT_EQ(error_reading(dir_ / "absent.jsonl"), (dir_ / "absent.jsonl").string() + ": no such file");
}

TEST_F(BenchQuestionFileTest, ADirectoryIsNotAQuestionFile) {
  EXPECT_EQ(error_reading(dir_), dir_.string() + ": not a regular file (a folder)");
}

TEST_F(BenchQuestionFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::filesystem::path path = dir_ / "bench.fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(error_reading(path), path.string() + ": not a regular file (a FIFO)");
}

TEST_F(BenchQuestionFileTest, AFileThatCannotBeOpenedIsNamed) {
  // Nobody, root included, can open a socket as a file.
  const std::filesystem::path path = dir_ / "bench.sock";
  const int socket = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(socket, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.string().copy(address.sun_path, sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(socket, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(error_reading(path), path.string() + ": cannot open: No such device or address");
  ::close(socket);
}

TEST_F(BenchQuestionFileTest, APathThatCannotBeResolvedIsNamed) {
  std::filesystem::create_symlink(dir_ / "b.jsonl", dir_ / "a.jsonl");
  std::filesystem::create_symlink(dir_ / "a.jsonl", dir_ / "b.jsonl");
  EXPECT_TRUE(error_reading(dir_ / "a.jsonl").starts_with((dir_ / "a.jsonl").string() + ": cannot open: "));
}

TEST_F(BenchQuestionFileTest, InvalidJsonNamesTheLineAndColumn) {
  const std::string message = error_for(std::string(kGood) + "\n\n" + R"({"question_id": 2,, "category": "qa"})");
  EXPECT_TRUE(message.starts_with(at(3) + "invalid JSON at column 19: syntax error")) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST_F(BenchQuestionFileTest, ATruncatedLineIsInvalidJson) {
  const std::string message = error_for(R"({"question_id": 1, "category": "qa", "turns": ["a")" "\r\n");
  EXPECT_TRUE(message.starts_with(at(1) + "invalid JSON at column ")) << message;
}

TEST_F(BenchQuestionFileTest, EveryLineMustBeAnObject) {
  const std::string hint = " (the file must be JSONL: one JSON object per line)";
  EXPECT_EQ(error_for(R"([1, 2])"), at(1) + "expected a JSON object, got list" + hint);
  EXPECT_EQ(error_for(std::string(kGood) + "\n" + R"("question")"), at(2) + "expected a JSON object, got string");
  EXPECT_EQ(error_for("null"), at(1) + "expected a JSON object, got null" + hint);
  // A JSON array over several lines, or a CSV file, fails on its first line with the hint.
  EXPECT_TRUE(error_for("[\n" + std::string(kGood) + "\n]").ends_with(hint));
  EXPECT_TRUE(error_for("question_id,category,turns\n1,qa,hi").ends_with(hint));
}

TEST_F(BenchQuestionFileTest, RequiredFieldsMustBePresent) {
  EXPECT_EQ(error_for(R"({"category": "qa", "turns": ["a"]})"), at(1) + "field 'question_id': missing");
  EXPECT_EQ(error_for(R"({"question_id": 1, "turns": ["a"]})"), at(1) + "field 'category': missing");
  EXPECT_EQ(error_for(R"({"question_id": 1, "category": "qa"})"), at(1) + "field 'turns': missing");
}

TEST_F(BenchQuestionFileTest, QuestionIdMustBeAnInt64) {
  EXPECT_EQ(error_for(R"({"question_id": "7", "category": "qa", "turns": ["a"]})"),
            at(1) + "field 'question_id': expected an integer, got string");
  EXPECT_EQ(error_for(R"({"question_id": 7.5, "category": "qa", "turns": ["a"]})"),
            at(1) + "field 'question_id': expected an integer, got number 7.5");
  EXPECT_EQ(error_for(R"({"question_id": true, "category": "qa", "turns": ["a"]})"),
            at(1) + "field 'question_id': expected an integer, got boolean true");
  EXPECT_EQ(error_for(R"({"question_id": 9223372036854775808, "category": "qa", "turns": ["a"]})"),
            at(1) + "field 'question_id': 9223372036854775808 is out of range");
}

TEST_F(BenchQuestionFileTest, CategoryMustBeAString) {
  EXPECT_EQ(error_for(R"({"question_id": 1, "category": 3, "turns": ["a"]})"),
            at(1) + "field 'category': expected a string, got number 3");
  EXPECT_EQ(error_for(R"({"question_id": 1, "category": null, "turns": ["a"]})"),
            at(1) + "field 'category': expected a string, got null");
}

TEST_F(BenchQuestionFileTest, TurnsMustBeANonEmptyListOfStrings) {
  EXPECT_EQ(error_for(R"({"question_id": 1, "category": "qa", "turns": "a"})"),
            at(1) + "field 'turns': expected a list of strings, got string");
  EXPECT_EQ(error_for(R"({"question_id": 1, "category": "qa", "turns": {"0": "a"}})"),
            at(1) + "field 'turns': expected a list of strings, got object");
  EXPECT_EQ(error_for(R"({"question_id": 1, "category": "qa", "turns": ["a", 2]})"),
            at(1) + "field 'turns[1]': expected a string, got number 2");
  EXPECT_EQ(error_for(R"({"question_id": 1, "category": "qa", "turns": []})"),
            at(1) + "field 'turns': expected at least one turn, got an empty list");
}

TEST_F(BenchQuestionFileTest, AMisshapenReferenceIsIgnoredWithOneWarningPerFile) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("r")", "expected a list of strings or of lists of strings, got string"},
      {R"(null)", "expected a list of strings or of lists of strings, got null"},
      {R"(["r", 4])", "expected a list of strings or of lists of strings, got list"},
      {R"([["r", false]])", "expected a list of strings or of lists of strings, got list"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::filesystem::path path = dir_ / ("bench" + std::to_string(i) + ".jsonl");
    const std::string line = R"({"question_id": 1, "category": "qa", "turns": ["a"], "reference": )" + cases[i].first + "}";
    std::ofstream(path, std::ios::binary) << line << "\n" << line.substr(0, 16) << "2" << line.substr(17) << "\n";
    testing::internal::CaptureStderr();
    const std::vector<Question> questions = read_questions(path);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "warning: " + path.string() + ":1: field 'reference': " + cases[i].second +
                                                          "; ignored (not reported again for this file)\n");
    ASSERT_EQ(questions.size(), 2u);
    EXPECT_TRUE(questions[1].reference.empty());
  }
}

TEST_F(BenchQuestionFileTest, NumbersBeyondDoubleAreRefusedNotThrown) {
  EXPECT_EQ(error_for(R"({"question_id": 1e400, "category": "qa", "turns": ["a"]})"),
            at(1) + "invalid JSON at column 17: number overflow parsing '1e400'");
  EXPECT_EQ(error_for(R"({"question_id": 18446744073709551616, "category": "qa", "turns": ["a"]})"),
            at(1) + "field 'question_id': expected an integer, got number 1.8446744073709552e+19");
}

TEST_F(BenchQuestionFileTest, ADuplicateIdNamesBothLines) {
  const std::string other = R"({"question_id": 2, "category": "qa", "turns": ["b"]})";
  EXPECT_EQ(error_for(std::string(kGood) + "\r\n" + other + "\r\n\r\n" + kGood + "\r\n"),
            at(4) + "field 'question_id': 1 is already used on line 1");
}

TEST_F(BenchQuestionFileTest, PromptTokenIdsGiveOneListPerTurn) {
  const std::vector<Question> questions = read_questions(
      write(R"({"question_id": 1, "category": "qa", "turns": ["a", "b"], "prompt_token_ids": [[1, 2], [1, 2, 3]]})"));
  ASSERT_EQ(questions.size(), 1u);
  EXPECT_EQ(questions[0].prompt_token_ids, (std::vector<std::vector<int64_t>>{{1, 2}, {1, 2, 3}}));
  EXPECT_TRUE(read_questions(write(kGood))[0].prompt_token_ids.empty());
}

TEST_F(BenchQuestionFileTest, PromptTokenIdsMustMatchTheTurnsAndHoldTokenIds) {
  const auto line = [](const std::string& ids) {
    return R"({"question_id": 1, "category": "qa", "turns": ["a", "b"], "prompt_token_ids": )" + ids + "}";
  };
  EXPECT_EQ(error_for(line("[[1]]")), at(1) + "field 'prompt_token_ids': has 1 lists for 2 turns");
  EXPECT_EQ(error_for(line("[[1], []]")), at(1) + "field 'prompt_token_ids[1]': expected at least one token, got an empty list");
  EXPECT_EQ(error_for(line("[[1], [2, -3]]")),
            at(1) + "field 'prompt_token_ids[1][1]': expected a token id (a non-negative integer), got number -3");
  EXPECT_EQ(error_for(line("[[1], [2.5]]")),
            at(1) + "field 'prompt_token_ids[1][0]': expected a token id (a non-negative integer), got number 2.5");
  EXPECT_EQ(error_for(line("[[1], \"x\"]")), at(1) + "field 'prompt_token_ids[1]': expected a list of token ids, got string");
  EXPECT_EQ(error_for(line("{}")),
            at(1) + "field 'prompt_token_ids': expected a list with one list of token ids per turn, got object");
}

}  // namespace
}  // namespace specgate
