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
};

struct EngineOutput {
  std::vector<Answer> answers;  // in question order
  EngineTally tally;
};

// Generates the first turn (or every turn) of every question, turn by turn, through
// decode_requests(); prompts are turn_prompt()'s (an answer's text is empty without a
// tokenizer) and a sequence's index is its question's
// position, which names its random stream as the oracle's do. `answered` receives each
// answer, in question order, as soon as it and every answer before it are complete. A
// LocatedViolation leaves with its questions and turn filled in.
EngineOutput run_engine(const EngineRun& run, const std::vector<Question>& questions,
                        const std::function<void(const Answer&)>& answered = {});

}  // namespace specgate::cli
