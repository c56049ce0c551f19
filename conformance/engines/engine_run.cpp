#include "conformance/engines/engine_run.h"

#include <algorithm>
#include <optional>
#include <variant>

#include "impl/bench/conversation.h"
#include "impl/common/dtype.h"

namespace specgate::cli {
namespace {

// A speculative engine's count (where `applies`); none for the others, which draft nothing.
std::optional<int64_t> draft_count(const EngineSpec& spec, int64_t count, bool applies = true) {
  return speculates(spec.engine) && applies ? std::optional<int64_t>(count) : std::nullopt;
}

// A tree run's record of its trees.
TreeSettings tree_settings(const TreePolicy& tree) {
  if (const TopkTree* topk = std::get_if<TopkTree>(&tree)) return {.topk = topk->topk, .depth = topk->depth, .nodes = topk->nodes};
  const TreeShape& shape = std::get<TreeShape>(tree);
  TreeSettings settings;
  for (int64_t node = 0; node < shape.size(); ++node) {
    settings.parents.push_back(shape.parent(node));
    settings.ranks.push_back(shape.rank(node));
  }
  return settings;
}

}  // namespace

RunInfo run_settings(const EngineSpec& spec, at::ScalarType dtype, const std::string& draft_id) {
  const DecoderSettings& decoder = spec.decoder;
  const SamplingParams& sampling = decoder.decode.sampling;
  RunInfo settings{
      .engine = engine_name(spec.engine),
      .batch_size = spec.engine == Engine::kOracle ? 1 : decoder.batch_size,
      .max_new_tokens = decoder.decode.max_new_tokens,
      .draft_tokens = draft_count(spec, decoder.decode.draft_tokens),
      .drafter = speculates(spec.engine) ? std::optional(spec.drafting.name()) : std::nullopt,
      .ngram_min = draft_count(spec, spec.drafting.lookup.min_n, spec.drafting.ngram),
      .ngram_max = draft_count(spec, spec.drafting.lookup.max_n, spec.drafting.ngram),
      .window = is_exspec(spec.engine) ? std::optional(decoder.exspec.window) : std::nullopt,
      .dtype = dtype_name(dtype),
      .draft = speculates(spec.engine) && !draft_id.empty() ? std::optional(draft_id) : std::nullopt,
      .sampling = {.temperature = sampling.temperature, .top_k = sampling.top_k, .top_p = sampling.top_p,
                   .min_p = sampling.min_p > 0.0 ? std::optional(sampling.min_p) : std::nullopt, .seed = sampling.seed}};
  if (spec.tree != nullptr) settings.tree = tree_settings(*spec.tree);
  return settings;
}

EngineOutput run_engine(const EngineRun& run, const std::vector<Question>& questions,
                        const std::function<void(const Answer&)>& answered) {
  EngineOutput output;
  const PromptFormat format{run.tokenizer, run.chat_template};
  RunInfo run_info = run_settings(run.spec, run.spec.target->options().dtype().toScalarType(), run.draft_id);
  run_info.started_at = unix_seconds();
  size_t turn_count = 1;
  for (const Question& question : questions) {
    output.answers.push_back({.question_id = question.question_id, .category = question.category,
                              .answer_id = engine_name(run.spec.engine) + "-" + std::to_string(question.question_id),
                              .model_id = run.model_id, .run = run_info});
    // Sequence q draws from SequenceRng(seed, stream q), whichever turn it answers.
    const size_t q = output.answers.size() - 1;
    output.answers.back().run->sampling.stream = run.streams.empty() ? q : run.streams.at(q);
    if (run.all_turns) turn_count = std::max(turn_count, question.turns.size());
    if (question.prompt_token_ids.empty()) output.answers.back().chat_template = chat_template_name(run.chat_template);
  }
  const auto is_complete = [&](size_t q) { return output.answers[q].turns.size() >= std::min(turn_count, questions[q].turns.size()); };
  const auto hand_over = [&](size_t q) {
    output.answers[q].tstamp = unix_seconds();
    if (answered) answered(output.answers[q]);
  };
  size_t complete = 0;  // answers handed to `answered`, in question order
  const auto hand_over_complete = [&] {
    for (; complete < questions.size() && is_complete(complete); ++complete) hand_over(complete);
  };
  for (size_t turn = 0; turn < turn_count && !(run.stopping && run.stopping()); ++turn) {
    std::vector<SequenceRequest> requests;  // questions that have this turn; indices are positions in `questions`
    for (size_t q = 0; q < questions.size(); ++q) {
      if (turn >= questions[q].turns.size()) continue;
      std::vector<std::vector<int64_t>> answers;
      for (const AnswerTurn& previous : output.answers[q].turns) answers.push_back(previous.token_ids);
      requests.push_back({.sequence_index = static_cast<int64_t>(q), .prompt = turn_prompt(format, questions[q], turn, answers),
                          .random_stream = run.streams.empty() ? std::nullopt : std::optional(run.streams.at(q))});
    }
    std::vector<const std::vector<int64_t>*> prompt_of(questions.size());
    for (const SequenceRequest& request : requests) prompt_of[request.sequence_index] = &request.prompt;
    try {
      decode_requests(run.spec, requests, output.tally, [&](SequenceResult result) {
        AnswerTurn answer{.text = run.tokenizer != nullptr ? run.tokenizer->decode(result.tokens) : std::string(),
                          .token_ids = std::move(result.tokens),
                          .prompt_token_ids = *prompt_of[result.sequence_index],
                          .decoding_steps = result.decoding_steps(), .wall_time = result.seconds,
                          .accept_lengths = std::move(result.accept_lengths),
                          .drafted_tokens = draft_count(run.spec, result.drafted),
                          .accepted_drafts = draft_count(run.spec, result.accepted),
                          .coverage = run.spec.engine == Engine::kOracle
                                          ? std::nullopt
                                          : std::optional(AnswerTurn::Coverage{result.ragged_rounds, result.realignments,
                                                                               result.finished_early}),
                          .top_logprobs = std::move(result.top_logprobs)};
        output.answers[result.sequence_index].turns.push_back(std::move(answer));
        hand_over_complete();
      }, run.stopping);
    } catch (const LocatedViolation& violation) {
      std::vector<int64_t> question_ids;
      for (int64_t sequence : violation.sequences) question_ids.push_back(questions[sequence].question_id);
      throw violation.with_questions(std::move(question_ids), turn);
    }
  }
  // Stopped early: the answers complete out of order are handed over too.
  for (size_t q = complete; q < questions.size(); ++q) {
    if (is_complete(q)) hand_over(q);
  }
  return output;
}

}  // namespace specgate::cli
