#include "impl/bench/answer.h"

#include <chrono>

#include <nlohmann/json.hpp>

namespace specgate {
namespace {

using nlohmann::json;

// choice[name] = one value per turn, when `get` gives one for every turn.
template <typename Get>
void put_per_turn(json& choice, const char* name, const std::vector<AnswerTurn>& turns, Get get) {
  json values = json::array();
  for (const AnswerTurn& turn : turns) {
    const auto value = get(turn);
    if (!value) return;
    values.push_back(*value);
  }
  choice[name] = std::move(values);
}

json run_json(const RunInfo& run) {
  json sampling = {{"temperature", run.sampling.temperature}};
  if (run.sampling.top_k) sampling["top_k"] = *run.sampling.top_k;
  if (run.sampling.top_p) sampling["top_p"] = *run.sampling.top_p;
  if (run.sampling.min_p) sampling["min_p"] = *run.sampling.min_p;
  if (run.sampling.seed) sampling["seed"] = *run.sampling.seed;
  if (run.sampling.stream) sampling["stream"] = *run.sampling.stream;
  json object = {{"engine", run.engine}, {"batch_size", run.batch_size}, {"started_at", run.started_at},
                 {"max_new_tokens", run.max_new_tokens}};
  if (run.server) object["server"] = *run.server;
  if (run.draft_tokens) object["draft_tokens"] = *run.draft_tokens;
  if (run.drafter) object["drafter"] = *run.drafter;
  if (run.ngram_min && run.ngram_max) object["ngram"] = {{"min", *run.ngram_min}, {"max", *run.ngram_max}};
  if (run.window) object["window"] = *run.window;
  if (run.dtype) object["dtype"] = *run.dtype;
  if (run.draft) object["draft"] = *run.draft;
  if (run.tree && run.tree->parents.empty())
    object["tree"] = {{"topk", run.tree->topk}, {"depth", run.tree->depth}, {"nodes", run.tree->nodes}};
  else if (run.tree)
    object["tree"] = {{"parents", run.tree->parents}, {"ranks", run.tree->ranks}};
  object["sampling"] = std::move(sampling);
  return object;
}

}  // namespace

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json answer_json(const Answer& answer) {
  json choice = {{"index", 0}, {"turns", json::array()}, {"wall_time", json::array()}, {"accept_lengths", json::array()}};
  bool any_logprobs = false;
  json logprobs = json::array();
  for (const AnswerTurn& turn : answer.turns) {
    choice["turns"].push_back(turn.text);
    choice["wall_time"].push_back(turn.wall_time);
    // One list per turn where the rounds are listed beside their drafts, as round_drafts is.
    if (answer.turns.front().round_drafts) choice["accept_lengths"].push_back(turn.accept_lengths);
    else for (int64_t accepted : turn.accept_lengths) choice["accept_lengths"].push_back(accepted);
    json per_token = json::array();
    for (const auto& alternatives : turn.top_logprobs) {
      json entry = json::array();
      for (const TokenLogprob& a : alternatives) entry.push_back({{"token_id", a.token_id}, {"logprob", a.logprob}});
      per_token.push_back(std::move(entry));
    }
    any_logprobs = any_logprobs || !turn.top_logprobs.empty();
    logprobs.push_back(std::move(per_token));
  }
  if (answer.has_token_ids) {
    put_per_turn(choice, "token_ids", answer.turns, [](const AnswerTurn& t) { return std::optional(t.token_ids); });
    if (any_logprobs) choice["top_logprobs"] = std::move(logprobs);
  }
  put_per_turn(choice, "new_tokens", answer.turns, [&answer](const AnswerTurn& t) {
    return answer.has_token_ids ? std::optional(t.new_tokens.value_or(static_cast<int64_t>(t.token_ids.size())))
                                : t.new_tokens;
  });
  put_per_turn(choice, "decoding_steps", answer.turns, [](const AnswerTurn& t) { return t.decoding_steps; });
  put_per_turn(choice, "drafted_tokens", answer.turns, [](const AnswerTurn& t) { return t.drafted_tokens; });
  put_per_turn(choice, "accepted_drafts", answer.turns, [](const AnswerTurn& t) { return t.accepted_drafts; });
  put_per_turn(choice, "round_drafts", answer.turns, [](const AnswerTurn& t) { return t.round_drafts; });
  const auto coverage = [](auto field) {
    return [field](const AnswerTurn& t) { return t.coverage ? std::optional((*t.coverage).*field) : std::nullopt; };
  };
  put_per_turn(choice, "ragged_rounds", answer.turns, coverage(&AnswerTurn::Coverage::ragged_rounds));
  put_per_turn(choice, "realignments", answer.turns, coverage(&AnswerTurn::Coverage::realignments));
  put_per_turn(choice, "finished_early", answer.turns, coverage(&AnswerTurn::Coverage::finished_early));
  put_per_turn(choice, "chunk_seconds", answer.turns,
               [](const AnswerTurn& t) { return t.stream ? std::optional(t.stream->chunk_seconds) : std::nullopt; });
  put_per_turn(choice, "chunk_tokens", answer.turns, [](const AnswerTurn& t) {
    return t.stream && !t.stream->chunk_tokens.empty() ? std::optional(t.stream->chunk_tokens) : std::nullopt;
  });
  put_per_turn(choice, "prompt_token_ids", answer.turns, [](const AnswerTurn& t) {
    return t.prompt_token_ids.empty() ? std::nullopt : std::optional(t.prompt_token_ids);
  });
  json line = {{"question_id", answer.question_id}, {"category", answer.category},
               {"answer_id", answer.answer_id},     {"model_id", answer.model_id},
               {"choices", json::array({choice})},  {"tstamp", answer.tstamp}};
  if (answer.chat_template) line["chat_template"] = *answer.chat_template;
  if (answer.run) line["run"] = run_json(*answer.run);
  return line;
}

void write_answer_line(std::ostream& out, const Answer& answer) {
  out << answer_json(answer).dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace) << "\n";
}

}  // namespace specgate
