#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specgate {

// One line of a Spec-Bench question file.
struct Question {
  int64_t question_id = 0;
  std::string category;
  std::vector<std::string> turns;      // at least one
  std::vector<std::string> reference;  // empty when the line has none
  // The exact ids an engine is fed for each turn, special tokens included; empty when the
  // line has none. When present they are the prompts: no tokenizer or template is involved.
  std::vector<std::vector<int64_t>> prompt_token_ids;
};

// Reads a Spec-Bench question.jsonl. Blank lines are skipped; anything else must be a JSON
// object with question_id (integer), category (string), turns (non-empty list of strings)
// and optionally reference (a list whose items are strings or lists of strings; Spec-Bench's
// rag rows nest their alternative answers that way, and nested lists are flattened) and
// prompt_token_ids (one non-empty list of token ids per turn).
// Unknown extra fields are allowed. CRLF line endings and a missing final newline are
// accepted. Bad input, a question_id used twice included, throws InputError naming the
// file, the line and the field.
std::vector<Question> read_questions(const std::filesystem::path& path);

// The same for text already in memory; `source` names it in error messages.
std::vector<Question> read_questions(std::istream& in, const std::string& source);

// The Spec-Bench subtask of a category: the eight MT-bench categories (writing, roleplay,
// reasoning, math, coding, extraction, stem, humanities) map to "mt_bench"; any other
// category (translation, summarization, qa, math_reasoning, rag) is its own subtask.
std::string subtask_of(std::string_view category);

// The questions of `all` with the ids in `ids`, in that order (all of them when `ids` is empty),
// then the first `limit` of those (all when `limit` is 0). Throws InputError naming
// --question-ids and `bench` for an id not in `all`.
std::vector<Question> select_questions(std::vector<Question> all, std::span<const int64_t> ids, int64_t limit,
                                       const std::string& bench);

// How many of `questions` carry their own prompt_token_ids: when all do, no tokenizer is needed.
int64_t questions_with_prompt_ids(std::span<const Question> questions);

}  // namespace specgate
