#include "conformance/engines/engine_run.h"

#include <chrono>

#include "impl/common/error.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/model_drafter.h"
#include "oracle/oracle.h"

namespace specgate::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::pair<const char*, Engine> kEngines[] = {
    {"oracle", Engine::kOracle}, {"nonspec-batch", Engine::kNonspecBatch}, {"eqspec", Engine::kEqspec}, {"rollback", Engine::kRollback}};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

Answer make_answer(const EngineRun& run, const Question& question, AnswerTurn turn) {
  return {.question_id = question.question_id, .category = question.category,
          .answer_id = engine_name(run.engine) + "-" + std::to_string(question.question_id), .model_id = run.model_id,
          .turns = {std::move(turn)}};
}

}  // namespace

Engine engine_from_name(const std::string& name) {
  for (const auto& [known, engine] : kEngines) {
    if (name == known) return engine;
  }
  throw InputError("--engine: unknown engine '" + name + "' (expected oracle, nonspec-batch, eqspec or rollback)");
}

std::string engine_name(Engine engine) {
  for (const auto& [known, value] : kEngines) {
    if (value == engine) return known;
  }
  return "?";
}

bool needs_draft(Engine engine) { return engine == Engine::kEqspec || engine == Engine::kRollback; }

EngineOutput run_engine(const EngineRun& run, const std::vector<Question>& questions) {
  EngineOutput output;
  if (run.engine == Engine::kOracle) {
    const OracleOptions options{.max_new_tokens = run.decode.max_new_tokens, .sampling = run.decode.sampling,
                                .eos_ids = run.decode.eos_ids, .top_logprobs = run.top_logprobs};
    for (size_t i = 0; i < questions.size(); ++i) {
      const auto start = Clock::now();
      const OracleOutput out =
          oracle_generate(*run.target, run.tokenizer->encode_prompt(questions[i].turns.front()), options, i);
      const double seconds = seconds_since(start);
      output.seconds += seconds;
      output.tokens += static_cast<int64_t>(out.tokens.size());
      output.answers.push_back(make_answer(run, questions[i],
                                           {.text = run.tokenizer->decode(out.tokens), .token_ids = out.tokens,
                                            .decoding_steps = static_cast<int64_t>(out.tokens.size()),
                                            .wall_time = seconds, .top_logprobs = out.top_logprobs}));
    }
    return output;
  }

  DecodeOptions decode = run.decode;
  decode.rollback = run.engine == Engine::kRollback;
  for (size_t first = 0; first < questions.size(); first += run.batch_size) {
    const size_t end = std::min(questions.size(), first + static_cast<size_t>(run.batch_size));
    std::vector<SequenceRequest> requests;
    for (size_t i = first; i < end; ++i)
      requests.push_back({static_cast<int64_t>(i), run.tokenizer->encode_prompt(questions[i].turns.front())});
    const auto start = Clock::now();
    std::vector<SequenceResult> results;
    if (run.engine == Engine::kNonspecBatch) {
      results = nonspec_batch_generate(*run.target, requests, decode, &output.stats);
    } else {
      ModelDrafter drafter(*run.draft);
      results = eqspec_generate(*run.target, drafter, requests, decode, &output.stats);
    }
    const double seconds = seconds_since(start);
    output.seconds += seconds;
    for (size_t i = first; i < end; ++i) {
      const SequenceResult& result = results[i - first];
      output.tokens += static_cast<int64_t>(result.tokens.size());
      // Each row of a batch is charged the batch's wall time.
      output.answers.push_back(make_answer(run, questions[i],
                                           {.text = run.tokenizer->decode(result.tokens), .token_ids = result.tokens,
                                            .decoding_steps = result.rounds + 1, .wall_time = seconds,
                                            .accept_lengths = result.accept_lengths}));
    }
  }
  return output;
}

}  // namespace specgate::cli
