#pragma once

#include <functional>
#include <string>
#include <vector>

#include "conformance/engines/engine_loop.h"
#include "impl/bench/answer.h"
#include "impl/bench/chat_template.h"
#include "impl/bench/question.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {

// An engine answering Spec-Bench questions.
struct EngineRun {
  EngineSpec spec;
  const Tokenizer* tokenizer = nullptr;  // null when every question carries prompt_token_ids
  ChatTemplate chat_template = ChatTemplate::kRaw;
  bool all_turns = false;  // every turn of multi-turn questions, not just the first
  std::string model_id;
  std::string draft_id;  // the draft model's folder name; empty without one
  std::function<bool()> stopping;  // asked before each step: true ends the run there
  // The random stream each question samples from (a resumed run's are those of the run it
  // resumes); empty: its position among the questions.
  std::vector<uint64_t> streams;
};

struct EngineOutput {
  std::vector<Answer> answers;  // in question order
  EngineTally tally;
};

// The settings every answer of an engine of `spec` records, its targets and draft loaded in
// `dtype` (the draft's folder named `draft_id`, empty without one), all but started_at and each
// answer's stream: what --resume requires of the answers it continues.
RunInfo run_settings(const EngineSpec& spec, at::ScalarType dtype, const std::string& draft_id);

// Generates the first turn (or every turn) of every question, turn by turn, through
// decode_requests(); prompts are turn_prompt()'s (an answer's text is empty without a
// tokenizer) and a sequence's index is its question's
// position, which names its random stream as the oracle's do (unless run.streams names it).
// `answered` receives each answer, in question order, as soon as it and every answer before it
// are complete; a run that run.stopping ends hands over the other complete answers after them.
// A LocatedViolation leaves with its questions and turn filled in.
EngineOutput run_engine(const EngineRun& run, const std::vector<Question>& questions,
                        const std::function<void(const Answer&)>& answered = {});

}  // namespace specgate::cli
