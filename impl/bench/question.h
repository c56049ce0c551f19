#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace specgate {

// One line of a Spec-Bench question file.
struct Question {
  int64_t question_id = 0;
  std::string category;
  std::vector<std::string> turns;      // at least one
  std::vector<std::string> reference;  // empty when the file has none; non-string items as JSON text
};

// Reads Spec-Bench question JSONL. Blank lines are skipped; every other line must be an
// object with question_id (integer), category (string), turns (non-empty list of strings)
// and optionally reference (a list); other fields are ignored. Errors, duplicate
// ids included, are InputErrors naming `source`, the line and the field.
std::vector<Question> read_questions(std::istream& in, const std::string& source);
std::vector<Question> read_questions(const std::filesystem::path& path);

// The Spec-Bench subtask of a category: the eight MT-bench categories count as "mt_bench";
// every other category is its own subtask.
std::string subtask_of(std::string_view category);

}  // namespace specgate
