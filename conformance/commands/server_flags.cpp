#include "conformance/commands/server_flags.h"

#include <fstream>

#include "impl/bench/chat_template.h"
#include "impl/common/error.h"
#include "impl/common/json_value.h"

namespace specgate::cli {

void add_server_flags(CLI::App& c, ServerFlags& o) {
  c.add_option("--endpoint", o.endpoint, "The server's root, http://HOST:PORT[/PREFIX]")->required();
  c.add_option("--api", o.api,
               "openai, vllm, sglang, llamacpp or tgi; openai-chat, vllm-chat or sglang-chat for /v1/chat/completions, "
               "where the server renders the conversation with its own template")
      ->required();
  c.add_option("--model", o.model, "The model name the server serves")->required();
  c.add_option("--bench", o.bench, "Spec-Bench question.jsonl")->required();
  c.add_option("--target", o.target,
               "Checkpoint folder whose tokenizer builds the prompts as token ids where the API takes ids and the bench "
               "line has no prompt_token_ids (text prompts without it), and whose vocabulary every answer's ids must lie in");
  c.add_option("--chat-template", o.chat_template, "raw, vicuna, chatml, smollm2, llama3 or llama2, as generate's")
      ->capture_default_str();
  c.add_option("--turns", o.turns, "first, or all turns of multi-turn questions")
      ->capture_default_str()
      ->check(CLI::IsMember({"first", "all"}));
  c.add_option("--max-new-tokens", o.max_new_tokens, "Tokens per answer")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  c.add_option("--top-logprobs", o.top_logprobs, "Alternatives asked per token (0: none)")->check(CLI::Range(0, 100));
  c.add_option("--timeout", o.http.timeout_seconds, "Seconds per request, from connecting to the response's last byte")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  c.add_option("--max-response-bytes", o.http.max_response_bytes, "Longest response body; a longer one fails the request")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  c.add_option("--retries", o.retries, "Retries of a request on connection errors, 429 and 5xx")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  c.add_option("--backoff", o.backoff, "Seconds before the first retry, doubled after each")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  c.add_option("--limit", o.limit, "Only the first N questions")->check(CLI::NonNegativeNumber);
  c.add_option("--question-ids", o.question_ids, "Only these questions, in this order, as generate's")->delimiter(',');
}

namespace {

// The model's vocabulary where --target's config.json names it: the ids a server may answer with,
// its embedding's padding rows included.
std::optional<int64_t> model_vocabulary(const std::filesystem::path& target) {
  std::ifstream in(target / "config.json");
  JsonError error;
  const std::optional<nlohmann::json> config = in ? parse_json(in, error) : std::nullopt;
  if (!config || !config->is_object()) return std::nullopt;
  const auto size = config->find("vocab_size");
  if (size == config->end() || !size->is_number_integer() || size->get<int64_t>() <= 0) return std::nullopt;
  return size->get<int64_t>();
}

}  // namespace

CollectJob server_job(const ServerFlags& o, const CLI::App& command, std::unique_ptr<Dialect>& dialect,
                      std::unique_ptr<Tokenizer>& tokenizer) {
  dialect = dialect_from_name(o.api);
  CollectJob job;
  job.endpoint = parse_endpoint(o.endpoint);
  job.dialect = dialect.get();
  job.defaults = {.model = o.model, .max_new_tokens = o.max_new_tokens, .top_logprobs = o.top_logprobs};
  job.questions = select_questions(read_questions(o.bench), o.question_ids, o.limit, o.bench.string());
  job.all_turns = o.turns == "all";
  job.prompt_format.chat_template = chat_template_from_name(o.chat_template, "--chat-template");
  if (dialect->takes_messages() && command.count("--chat-template") > 0)
    throw InputError("--chat-template: the " + o.api + " API renders the conversation with the server's own template");
  if (o.top_logprobs > 0 && !dialect->gives_top_logprobs())
    throw InputError("--top-logprobs: the " + o.api + " API names alternatives by text, not token id");
  // Every API's answers are held to --target's vocabulary; its tokenizer builds the prompts only
  // where the API takes ids.
  if (!o.target.empty()) {
    job.vocabulary = model_vocabulary(o.target);
    if (dialect->takes_token_ids()) {
      tokenizer = load_tokenizer(o.target);
      job.prompt_format.tokenizer = tokenizer.get();
      check_template_tokens(job.prompt_format, "--chat-template");
    }
  }
  job.http = o.http;
  job.retries = o.retries;
  job.backoff_seconds = o.backoff;
  job.inputs = {{"--bench", o.bench}, {"--target", o.target}};
  return job;
}

}  // namespace specgate::cli
