#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>

#include "conformance/collect/collector.h"
#include "conformance/commands/commands.h"
#include "conformance/commands/interrupted.h"
#include "impl/bench/chat_template.h"
#include "impl/common/error.h"

namespace specgate::cli {
namespace {

struct CollectOptions {
  std::string endpoint, api, model;
  std::filesystem::path bench, out, target;
  std::string turns = "first";
  std::string chat_template = "raw";
  int64_t max_new_tokens = 128;
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  uint64_t seed = 0;
  int64_t top_logprobs = 0;
  int64_t concurrency = 1;
  HttpLimits http;
  int64_t retries = 5;
  double backoff = 1.0;
  bool resume = false;
  int64_t limit = 0;
  int64_t samples = 1;
};

void run_collect(const CollectOptions& o, const CLI::App& command) {
  const std::unique_ptr<Dialect> dialect = dialect_from_name(o.api);
  CollectJob job;
  job.endpoint = parse_endpoint(o.endpoint);
  job.dialect = dialect.get();
  job.defaults = {.model = o.model, .max_new_tokens = o.max_new_tokens, .temperature = o.temperature,
                  .top_logprobs = o.top_logprobs};
  if (!(o.temperature >= 0.0)) throw InputError("--temperature: must be >= 0 (0 is greedy)");
  if (command.count("--top-k") > 0) job.defaults.top_k = o.top_k;
  if (command.count("--top-p") > 0) job.defaults.top_p = o.top_p;
  if (command.count("--min-p") > 0) {
    if (!dialect->takes_min_p()) throw InputError("--min-p: the " + o.api + " API has no min_p");
    job.defaults.min_p = o.min_p;
  }
  if (command.count("--seed") > 0) job.defaults.seed = o.seed;
  job.questions = read_questions(o.bench);
  if (o.limit > 0 && static_cast<int64_t>(job.questions.size()) > o.limit) job.questions.resize(o.limit);
  job.all_turns = o.turns == "all";
  job.prompt_format.chat_template = chat_template_from_name(o.chat_template, "--chat-template");
  if (dialect->takes_messages() && command.count("--chat-template") > 0)
    throw InputError("--chat-template: the " + o.api + " API renders the conversation with the server's own template");
  if (o.top_logprobs > 0 && !dialect->gives_top_logprobs())
    throw InputError("--top-logprobs: the " + o.api + " API names alternatives by text, not token id");
  std::unique_ptr<Tokenizer> tokenizer;
  if (!o.target.empty()) {
    if (!dialect->takes_token_ids()) throw InputError("--target: the " + o.api + " API takes text prompts only");
    tokenizer = load_tokenizer(o.target);
    job.prompt_format.tokenizer = tokenizer.get();
    check_template_tokens(job.prompt_format, "--chat-template");
  }
  job.concurrency = o.concurrency;
  job.http = o.http;
  job.retries = o.retries;
  job.backoff_seconds = o.backoff;
  job.out = o.out;
  job.inputs = {{"--bench", o.bench}, {"--target", o.target}};
  job.resume = o.resume;
  if (o.samples > 1 && !job.defaults.seed)
    throw InputError("--samples: give --seed; each sample is sent, and records, a seed of its own");
  if (o.samples > 1 && o.temperature == 0.0) throw InputError("--samples: greedy decoding (--temperature 0) has one answer");
  job.samples = o.samples;

  const CollectResult result = collect_answers(job);
  std::printf("collect: %lld answers written, %lld already in %s\n", static_cast<long long>(result.written),
              static_cast<long long>(result.skipped), o.out.string().c_str());
  std::fflush(stdout);
  const int64_t asked = static_cast<int64_t>(job.questions.size()) * job.samples;
  const std::string left = std::to_string(asked - result.written - result.skipped) + " answer(s) left; --resume continues";
  if (result.error) throw InputError(*result.error + " (" + left + ")");
  if (result.interrupted) throw Interrupted("collect: interrupted (" + left + ")");
}

}  // namespace

void add_collect_command(CLI::App& app) {
  auto o = std::make_shared<CollectOptions>();
  CLI::App* c = app.add_subcommand(
      "collect", "Ask a running server (vLLM, SGLang, llama.cpp, TGI or any OpenAI-compatible one) every question of a "
                 "bench, on its completion or chat endpoint, and write its answers with token ids; exit 2 when the input "
                 "or the endpoint is unusable");
  c->add_option("--endpoint", o->endpoint, "The server's root, http://HOST:PORT[/PREFIX]")->required();
  c->add_option("--api", o->api,
                "openai, vllm, sglang, llamacpp or tgi; openai-chat, vllm-chat or sglang-chat for /v1/chat/completions, "
                "where the server renders the conversation with its own template")
      ->required();
  c->add_option("--model", o->model, "The model name the server serves")->required();
  c->add_option("--bench", o->bench, "Spec-Bench question.jsonl")->required();
  c->add_option("--out", o->out, "Answer JSONL to write")->required();
  c->add_option("--target", o->target,
                "Checkpoint folder whose tokenizer builds the prompts as token ids where the bench line has no "
                "prompt_token_ids (text prompts without it)");
  c->add_option("--chat-template", o->chat_template, "raw, vicuna, chatml, smollm2, llama3 or llama2, as generate's")
      ->capture_default_str();
  c->add_option("--turns", o->turns, "first, or all turns of multi-turn questions")
      ->capture_default_str()
      ->check(CLI::IsMember({"first", "all"}));
  c->add_option("--max-new-tokens", o->max_new_tokens, "Tokens per answer")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  c->add_option("--temperature", o->temperature, "0 means greedy")->capture_default_str();
  c->add_option("--top-k", o->top_k, "Sent only when given")->check(CLI::NonNegativeNumber);
  c->add_option("--top-p", o->top_p, "Sent only when given")->check(CLI::Range(0.0, 1.0));
  c->add_option("--min-p", o->min_p, "Sent only when given")->check(CLI::Range(0.0, 1.0));
  c->add_option("--seed", o->seed, "Sent only when given");
  c->add_option("--top-logprobs", o->top_logprobs, "Alternatives asked per token (0: none)")->check(CLI::Range(0, 100));
  c->add_option("--concurrency", o->concurrency, "Requests in flight")->capture_default_str()->check(CLI::Range(1, 1024));
  c->add_option("--timeout", o->http.timeout_seconds, "Seconds per request, from connecting to the response's last byte")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  c->add_option("--max-response-bytes", o->http.max_response_bytes, "Longest response body; a longer one fails the request")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  c->add_option("--retries", o->retries, "Retries of a request on connection errors, 429 and 5xx")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  c->add_option("--backoff", o->backoff, "Seconds before the first retry, doubled after each")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  c->add_flag("--resume", o->resume, "Skip the questions --out already answers, and append");
  c->add_option("--limit", o->limit, "Only the first N questions")->check(CLI::NonNegativeNumber);
  c->add_option("--samples", o->samples,
                "Ask every question N times, sample j of the q-th question with seed --seed + q * N + j")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->callback([o, c] { run_collect(*o, *c); });
}

}  // namespace specgate::cli
