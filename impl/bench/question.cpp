#include "impl/bench/question.h"

#include <array>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate {
namespace {

using nlohmann::json;

std::string type_name(const json& value) { return value.is_null() ? "null" : value.type_name(); }

std::vector<std::string> string_list(const json& object, const char* field, const std::string& where) {
  const json& value = object.at(field);
  if (!value.is_array()) throw InputError(where + "field '" + field + "': expected a list of strings, got " + type_name(value));
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string())
      throw InputError(where + "field '" + field + "[" + std::to_string(i) + "]': expected a string, got " + type_name(value[i]));
    out.push_back(value[i].get<std::string>());
  }
  return out;
}

}  // namespace

std::vector<Question> read_questions(std::istream& in, const std::string& source) {
  std::vector<Question> questions;
  std::map<int64_t, int64_t> line_of_id;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    const json object = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded()) throw InputError(where + "not valid JSON");
    if (!object.is_object()) throw InputError(where + "expected a JSON object, got " + type_name(object));
    for (const char* field : {"question_id", "category", "turns"}) {
      if (!object.contains(field)) throw InputError(where + "field '" + field + "': missing");
    }
    Question question;
    const json& id = object["question_id"];
    if (!id.is_number_integer()) throw InputError(where + "field 'question_id': expected an integer, got " + type_name(id));
    question.question_id = id.get<int64_t>();
    const json& category = object["category"];
    if (!category.is_string()) throw InputError(where + "field 'category': expected a string, got " + type_name(category));
    question.category = category.get<std::string>();
    question.turns = string_list(object, "turns", where);
    if (question.turns.empty()) throw InputError(where + "field 'turns': empty");
    if (object.contains("reference") && !object["reference"].is_null()) {
      const json& reference = object["reference"];
      if (!reference.is_array())
        throw InputError(where + "field 'reference': expected a list, got " + type_name(reference));
      for (const json& item : reference) question.reference.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    }

    const auto [previous, inserted] = line_of_id.emplace(question.question_id, number);
    if (!inserted)
      throw InputError(where + "field 'question_id': " + std::to_string(question.question_id) + " already on line " +
                       std::to_string(previous->second));
    questions.push_back(std::move(question));
  }
  if (in.bad()) throw InputError(source + ": read error");
  return questions;
}

std::vector<Question> read_questions(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open");
  return read_questions(in, path.string());
}

std::string subtask_of(std::string_view category) {
  static constexpr std::array<std::string_view, 8> kMtBench = {"writing", "roleplay", "reasoning", "math",
                                                               "coding",  "extraction", "stem", "humanities"};
  for (std::string_view mt : kMtBench) {
    if (category == mt) return "mt_bench";
  }
  return std::string(category);
}

}  // namespace specgate
