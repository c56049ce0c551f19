#include "conformance/engines/engine_run.h"

#include <chrono>
#include <map>

#include "impl/bench/conversation.h"
#include "impl/common/error.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/model_drafter.h"
#include "oracle/oracle.h"

namespace specgate::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::pair<const char*, Engine> kEngines[] = {{"oracle", Engine::kOracle},
                                                      {"nonspec-batch", Engine::kNonspecBatch},
                                                      {"eqspec", Engine::kEqspec},
                                                      {"exspec", Engine::kExspec},
                                                      {"rollback", Engine::kRollback}};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// One turn of every question that has it, with the oracle, one prompt at a time.
std::vector<AnswerTurn> oracle_turns(const EngineRun& run, const std::vector<std::vector<int64_t>>& prompts,
                                     EngineOutput& output) {
  const OracleOptions options{.max_new_tokens = run.decode.max_new_tokens, .sampling = run.decode.sampling,
                              .eos_ids = run.decode.eos_ids, .top_logprobs = run.top_logprobs};
  std::vector<AnswerTurn> turns;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto start = Clock::now();
    OracleOutput out = oracle_generate(*run.target, prompts[i], options, i);
    const double seconds = seconds_since(start);
    output.seconds += seconds;
    turns.push_back({.token_ids = std::move(out.tokens), .wall_time = seconds, .top_logprobs = std::move(out.top_logprobs)});
    turns.back().decoding_steps = static_cast<int64_t>(turns.back().token_ids.size());
  }
  return turns;
}

AnswerTurn answer_turn(SequenceResult result, double seconds) {
  return {.token_ids = std::move(result.tokens), .decoding_steps = result.rounds + 1, .wall_time = seconds,
          .accept_lengths = std::move(result.accept_lengths)};
}

// One turn with a batch engine. Sequence indices are positions in `prompts`, which name each
// sequence's random stream as the oracle's do.
std::vector<AnswerTurn> batch_turns(const EngineRun& run, const std::vector<std::vector<int64_t>>& prompts,
                                    EngineOutput& output) {
  DecodeOptions decode = run.decode;
  decode.rollback = run.engine == Engine::kRollback;
  std::vector<SequenceRequest> all;
  for (size_t i = 0; i < prompts.size(); ++i) all.push_back({static_cast<int64_t>(i), prompts[i]});

  std::vector<AnswerTurn> turns;
  if (run.engine == Engine::kExspec) {
    ModelDrafter drafter(*run.draft);
    ExspecOptions exspec = run.exspec;
    exspec.batch_size = run.batch_size;
    const size_t first_latency = output.stats.latencies.size();
    const auto start = Clock::now();
    std::vector<SequenceResult> results =
        exspec_generate(*run.target, drafter, all, decode, exspec, &output.stats, &output.exspec_stats);
    output.seconds += seconds_since(start);
    // Each answer is charged its own time from admission to its last token.
    std::map<int64_t, double> latency;
    for (size_t i = first_latency; i < output.stats.latencies.size(); ++i)
      latency[output.stats.latencies[i].sequence_index] = output.stats.latencies[i].seconds;
    for (SequenceResult& result : results) {
      const double seconds = latency[result.sequence_index];
      turns.push_back(answer_turn(std::move(result), seconds));
    }
    return turns;
  }
  for (size_t first = 0; first < all.size(); first += run.batch_size) {
    const std::span<const SequenceRequest> batch =
        std::span(all).subspan(first, std::min(all.size() - first, static_cast<size_t>(run.batch_size)));
    const auto start = Clock::now();
    std::vector<SequenceResult> results;
    if (run.engine == Engine::kNonspecBatch) {
      results = nonspec_batch_generate(*run.target, batch, decode, &output.stats);
    } else {
      ModelDrafter drafter(*run.draft);
      results = eqspec_generate(*run.target, drafter, batch, decode, &output.stats);
    }
    const double seconds = seconds_since(start);
    output.seconds += seconds;
    // Each row of a batch is charged the batch's wall time.
    for (SequenceResult& result : results) turns.push_back(answer_turn(std::move(result), seconds));
  }
  return turns;
}

}  // namespace

Engine engine_from_name(const std::string& name) {
  for (const auto& [known, engine] : kEngines) {
    if (name == known) return engine;
  }
  throw InputError("--engine: unknown engine '" + name + "' (expected oracle, nonspec-batch, eqspec, exspec or rollback)");
}

std::string engine_name(Engine engine) {
  for (const auto& [known, value] : kEngines) {
    if (value == engine) return known;
  }
  return "?";
}

bool needs_draft(Engine engine) {
  return engine == Engine::kEqspec || engine == Engine::kExspec || engine == Engine::kRollback;
}

EngineOutput run_engine(const EngineRun& run, const std::vector<Question>& questions) {
  EngineOutput output;
  const PromptFormat format{run.tokenizer, run.chat_template};
  for (const Question& question : questions) {
    output.answers.push_back({.question_id = question.question_id, .category = question.category,
                              .answer_id = engine_name(run.engine) + "-" + std::to_string(question.question_id),
                              .model_id = run.model_id});
    if (question.prompt_token_ids.empty()) output.answers.back().chat_template = chat_template_name(run.chat_template);
  }
  size_t turn_count = 1;
  if (run.all_turns) {
    for (const Question& question : questions) turn_count = std::max(turn_count, question.turns.size());
  }
  for (size_t turn = 0; turn < turn_count; ++turn) {
    std::vector<size_t> asked;  // questions that have this turn
    std::vector<std::vector<int64_t>> prompts;
    for (size_t q = 0; q < questions.size(); ++q) {
      if (turn >= questions[q].turns.size()) continue;
      std::vector<std::vector<int64_t>> answers;
      for (const AnswerTurn& previous : output.answers[q].turns) answers.push_back(previous.token_ids);
      asked.push_back(q);
      prompts.push_back(turn_prompt(format, questions[q], turn, answers));
    }
    std::vector<AnswerTurn> turns =
        run.engine == Engine::kOracle ? oracle_turns(run, prompts, output) : batch_turns(run, prompts, output);
    for (size_t i = 0; i < asked.size(); ++i) {
      AnswerTurn& answer = turns[i];
      if (run.tokenizer != nullptr) answer.text = run.tokenizer->decode(answer.token_ids);
      answer.prompt_token_ids = std::move(prompts[i]);
      output.tokens += static_cast<int64_t>(answer.token_ids.size());
      output.answers[asked[i]].turns.push_back(std::move(answer));
    }
  }
  return output;
}

}  // namespace specgate::cli
