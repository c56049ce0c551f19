#pragma once

#include <filesystem>
#include <optional>

#include "impl/scoring/answer_reader.h"
#include "impl/scoring/score_report.h"

namespace specgate {

class Rescorer;
class Tokenizer;

struct ScoreRequest {
  std::filesystem::path reference, candidate;
  std::optional<std::filesystem::path> bench;  // prompts for re-scoring, categories for plain answers
  ScoreSettings settings;
  const Rescorer* rescorer = nullptr;    // re-scores divergences when set
  const Tokenizer* tokenizer = nullptr;  // decodes the tokens around divergences when set
  AnswerProgress progress;               // over the candidate's answers
};

// Scores the candidate answers against the reference answers question by question (DESIGN.md
// section 4). Both files are read once, in step, one line at a time; an answer is compared as
// soon as both sides have been read and then forgotten. An answer read before its other side
// is kept as its line's offset and parsed again when the other side comes, so memory is
// bounded by the longest line plus a few bytes per question whatever the order of the files.
// Missing and unexpected question ids are reported, never dropped. Malformed input, a
// question answered twice in one file included, throws InputError naming file, line and
// field.
ScoreReport score_answers(const ScoreRequest& request);

}  // namespace specgate
