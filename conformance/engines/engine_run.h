#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "impl/bench/answer.h"
#include "impl/bench/question.h"
#include "impl/decoding/decode_types.h"
#include "impl/model/transformer.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {

enum class Engine { kOracle, kNonspecBatch, kEqspec, kRollback };

// Throws InputError for anything but oracle, nonspec-batch, eqspec, rollback.
Engine engine_from_name(const std::string& name);
std::string engine_name(Engine engine);
bool needs_draft(Engine engine);

struct EngineRun {
  Engine engine = Engine::kOracle;
  const Transformer* target = nullptr;
  const Transformer* draft = nullptr;  // eqspec and rollback
  const Tokenizer* tokenizer = nullptr;
  DecodeOptions decode;
  int64_t batch_size = 8;
  int64_t top_logprobs = 0;  // oracle only
  std::string model_id;
};

struct EngineOutput {
  std::vector<Answer> answers;  // in question order
  DecodeStats stats;            // batch engines
  double seconds = 0.0;
  int64_t tokens = 0;
};

// Generates the first turn of every question with the chosen engine. Prompts are the
// tokenizer's encode_prompt(turns[0]).
EngineOutput run_engine(const EngineRun& run, const std::vector<Question>& questions);

}  // namespace specgate::cli
