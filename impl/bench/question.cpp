#include "impl/bench/question.h"

#include <algorithm>
#include <array>
#include <istream>
#include <limits>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/json_line_context.h"
#include "impl/common/line_reader.h"

namespace specgate {
namespace {

using nlohmann::json;

const json& required(const json& object, const char* field, const LineContext& context) {
  const auto it = object.find(field);
  if (it == object.end()) context.fail_field(field, "missing");
  return *it;
}

std::vector<std::string> parse_strings(const json& value, const std::string& field, const LineContext& context) {
  if (!value.is_array()) context.fail_type(field, "a list of strings", value);
  std::vector<std::string> strings;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) context.fail_type(field + "[" + std::to_string(i) + "]", "a string", value[i]);
    strings.push_back(value[i].get<std::string>());
  }
  return strings;
}

// Reference answers, which no command uses: a misshapen list is ignored with a warning.
std::vector<std::string> parse_reference(const json& value, const LineContext& context) {
  const auto is_string = [](const json& element) { return element.is_string(); };
  const auto is_strings = [&](const json& element) {
    return element.is_string() || (element.is_array() && std::all_of(element.begin(), element.end(), is_string));
  };
  if (!value.is_array() || !std::all_of(value.begin(), value.end(), is_strings)) {
    context.ignore_type("reference", "a list of strings or of lists of strings", value);
    return {};
  }
  std::vector<std::string> reference;
  for (const json& element : value) {
    if (element.is_string()) {
      reference.push_back(element.get<std::string>());
    } else {
      for (const json& alternative : element) reference.push_back(alternative.get<std::string>());
    }
  }
  return reference;
}

std::vector<std::vector<int64_t>> parse_prompt_token_ids(const json& value, size_t turns, const LineContext& context) {
  constexpr const char* kField = "prompt_token_ids";
  if (!value.is_array()) context.fail_type(kField, "a list with one list of token ids per turn", value);
  if (value.size() != turns)
    context.fail_field(kField, "has " + std::to_string(value.size()) + " lists for " + std::to_string(turns) + " turns");
  std::vector<std::vector<int64_t>> prompts;
  for (size_t t = 0; t < value.size(); ++t) {
    const std::string turn_field = std::string(kField) + "[" + std::to_string(t) + "]";
    if (!value[t].is_array()) context.fail_type(turn_field, "a list of token ids", value[t]);
    if (value[t].empty()) context.fail_field(turn_field, "expected at least one token, got an empty list");
    std::vector<int64_t>& ids = prompts.emplace_back();
    for (size_t i = 0; i < value[t].size(); ++i) {
      const json& id = value[t][i];
      if (!id.is_number_integer() || (!id.is_number_unsigned() && id.get<int64_t>() < 0) ||
          (id.is_number_unsigned() && id.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}))
        context.fail_type(turn_field + "[" + std::to_string(i) + "]", "a token id (a non-negative integer)", id);
      ids.push_back(id.get<int64_t>());
    }
  }
  return prompts;
}

Question parse_question(const json& object, const LineContext& context) {
  if (!object.is_object()) context.fail_not_object(describe_json(object));
  Question question;
  question.question_id = context.integer(required(object, "question_id", context), "question_id",
                                         std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  const json& category = required(object, "category", context);
  if (!category.is_string()) context.fail_type("category", "a string", category);
  question.category = category.get<std::string>();
  question.turns = parse_strings(required(object, "turns", context), "turns", context);
  if (question.turns.empty()) context.fail_field("turns", "expected at least one turn, got an empty list");
  if (const auto reference = object.find("reference"); reference != object.end())
    question.reference = parse_reference(*reference, context);
  if (const auto ids = object.find("prompt_token_ids"); ids != object.end())
    question.prompt_token_ids = parse_prompt_token_ids(*ids, question.turns.size(), context);
  return question;
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t") == std::string_view::npos; }

// The questions of a file's lines, refusing a question_id used twice.
class QuestionLines {
 public:
  explicit QuestionLines(std::string source) : source_(std::move(source)) {}

  // Line `number`, without its end of line.
  void add(std::string_view line, int64_t number) {
    if (is_blank(line)) return;
    const LineContext context(source_, number);
    Question question = parse_question(context.parse(line), context);
    const auto [first, inserted] = line_of_id_.emplace(question.question_id, number);
    if (!inserted) {
      context.fail_field("question_id", std::to_string(question.question_id) + " is already used on line " +
                                            std::to_string(first->second));
    }
    questions_.push_back(std::move(question));
  }
  std::vector<Question> take() { return std::move(questions_); }

 private:
  std::string source_;
  std::vector<Question> questions_;
  std::unordered_map<int64_t, int64_t> line_of_id_;
};

}  // namespace

std::vector<Question> read_questions(std::istream& in, const std::string& source) {
  QuestionLines questions(source);
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > kMaxLineBytes)
      throw InputError(source + ":" + std::to_string(number) + ": the line is longer than " +
                       std::to_string(kMaxLineBytes >> 20) + " MiB");
    questions.add(line, number);
  }
  if (in.bad()) throw InputError(source + ": read error after line " + std::to_string(number));
  return questions.take();
}

std::vector<Question> read_questions(const std::filesystem::path& path) {
  QuestionLines questions(path.string());
  LineReader lines(path);
  std::string line;
  while (lines.next(line)) questions.add(line, lines.line_number());
  return questions.take();
}

std::string subtask_of(std::string_view category) {
  static constexpr std::array<std::string_view, 8> kMtBench = {"writing", "roleplay",   "reasoning", "math",
                                                               "coding",  "extraction", "stem",      "humanities"};
  for (std::string_view mt_bench_category : kMtBench) {
    if (category == mt_bench_category) return "mt_bench";
  }
  return std::string(category);
}

std::vector<Question> select_questions(std::vector<Question> all, std::span<const int64_t> ids, int64_t limit,
                                       const std::string& bench) {
  if (!ids.empty()) {
    std::vector<Question> chosen;
    for (int64_t id : ids) {
      const auto found = std::find_if(all.begin(), all.end(), [id](const Question& q) { return q.question_id == id; });
      if (found == all.end()) throw InputError("--question-ids: question " + std::to_string(id) + " is not in " + bench);
      chosen.push_back(*found);
    }
    all = std::move(chosen);
  }
  if (limit > 0 && static_cast<int64_t>(all.size()) > limit) all.resize(limit);
  return all;
}

int64_t questions_with_prompt_ids(std::span<const Question> questions) {
  return std::ranges::count_if(questions, [](const Question& q) { return !q.prompt_token_ids.empty(); });
}

}  // namespace specgate
