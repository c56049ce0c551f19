#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "impl/bench/answer.h"
#include "impl/bench/chat_template.h"
#include "impl/bench/question.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/exspec.h"
#include "impl/model/transformer.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {

enum class Engine { kOracle, kNonspecBatch, kEqspec, kExspec, kRollback };

// Throws InputError for anything but oracle, nonspec-batch, eqspec, exspec, rollback.
Engine engine_from_name(const std::string& name);
std::string engine_name(Engine engine);
bool needs_draft(Engine engine);

struct EngineRun {
  Engine engine = Engine::kOracle;
  const Transformer* target = nullptr;
  const Transformer* draft = nullptr;  // eqspec, exspec and rollback
  const Tokenizer* tokenizer = nullptr;  // null when every question carries prompt_token_ids
  ChatTemplate chat_template = ChatTemplate::kRaw;
  DecodeOptions decode;
  int64_t batch_size = 8;
  ExspecOptions exspec;     // exspec: window, ordering, aging (its batch_size is batch_size)
  bool all_turns = false;   // every turn of multi-turn questions, not just the first
  int64_t top_logprobs = 0;  // oracle only
  std::string model_id;
};

struct EngineOutput {
  std::vector<Answer> answers;  // in question order
  DecodeStats stats;            // batch engines
  ExspecStats exspec_stats;     // exspec
  double seconds = 0.0;
  int64_t tokens = 0;
};

// Generates the first turn (or every turn) of every question with the chosen engine, turn
// by turn; prompts are turn_prompt()'s, answers' text is empty without a tokenizer. Batch engines take the questions in batches of
// batch_size in order; exspec takes them all as its pool.
EngineOutput run_engine(const EngineRun& run, const std::vector<Question>& questions);

}  // namespace specgate::cli
