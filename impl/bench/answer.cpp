#include "impl/bench/answer.h"

#include <nlohmann/json.hpp>

namespace specgate {

void write_answer_line(std::ostream& out, const Answer& answer) {
  using nlohmann::json;
  json choice = {{"index", 0}, {"turns", json::array()}, {"token_ids", json::array()}, {"prompt_token_ids", json::array()}, {"new_tokens", json::array()},
                 {"decoding_steps", json::array()}, {"wall_time", json::array()}, {"accept_lengths", json::array()}};
  bool any_logprobs = false;
  json logprobs = json::array();
  for (const AnswerTurn& turn : answer.turns) {
    choice["turns"].push_back(turn.text);
    choice["token_ids"].push_back(turn.token_ids);
    choice["prompt_token_ids"].push_back(turn.prompt_token_ids);
    choice["new_tokens"].push_back(turn.token_ids.size());
    choice["decoding_steps"].push_back(turn.decoding_steps);
    choice["wall_time"].push_back(turn.wall_time);
    for (int64_t accepted : turn.accept_lengths) choice["accept_lengths"].push_back(accepted);
    json per_token = json::array();
    for (const auto& alternatives : turn.top_logprobs) {
      json entry = json::array();
      for (const TokenLogprob& a : alternatives) entry.push_back({{"token_id", a.token_id}, {"logprob", a.logprob}});
      per_token.push_back(std::move(entry));
    }
    any_logprobs = any_logprobs || !turn.top_logprobs.empty();
    logprobs.push_back(std::move(per_token));
  }
  if (any_logprobs) choice["top_logprobs"] = std::move(logprobs);
  json line = {{"question_id", answer.question_id}, {"category", answer.category},
               {"answer_id", answer.answer_id},     {"model_id", answer.model_id},
               {"choices", json::array({choice})},  {"tstamp", answer.tstamp}};
  if (answer.chat_template) line["chat_template"] = *answer.chat_template;
  out << line.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace) << "\n";
}

}  // namespace specgate
