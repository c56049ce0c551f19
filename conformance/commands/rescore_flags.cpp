#include "conformance/commands/rescore_flags.h"

#include <cstdio>

#include "conformance/collect/server_check.h"
#include "impl/common/dtype.h"
#include "impl/common/error.h"

namespace specgate::cli {

void add_rescore_endpoint_flags(CLI::App& c, RescoreEndpointFlags& o, const std::string& needs) {
  c.add_option("--rescore-endpoint", o.endpoint,
               "The reference engine (the same engine, speculation off), http://HOST:PORT[/PREFIX], re-scoring in place of a "
               "checkpoint through its prompt log-probabilities; " + needs);
  c.add_option("--rescore-api", o.api, "vllm (vLLM and specgate serve: prompt_logprobs) or sglang (input_top_logprobs)")
      ->capture_default_str()
      ->check(CLI::IsMember({"vllm", "sglang", "openai"}));
  c.add_option("--rescore-model", o.model, "The model name requests carry (default: the first the server lists)");
  c.add_option("--rescore-top-k", o.top_k, "Alternatives asked per position, beside the token itself (vLLM: at most its --max-logprobs)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c.add_option("--rescore-vocab-size", o.vocab_size, "The reference model's vocabulary size (config.json's vocab_size)")
      ->check(CLI::Range(1, 1 << 30));
  c.add_option("--rescore-eos-id", o.eos_ids, "A token id that ends generation (repeatable; generation_config.json's eos_token_id)");
  c.add_option("--rescore-concurrency", o.concurrency, "Requests to the reference engine in flight at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  c.add_option("--rescore-cache", o.cache,
               "Folder that keeps the reference engine's replies by the hash of model, k and token ids: a rerun asks nothing "
               "again, and a run cut short resumes");
  c.add_option("--rescore-timeout", o.http.timeout_seconds, "Seconds per request to the reference engine")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  c.add_option("--rescore-retries", o.retries, "Retries of a request on connection errors, 429 and 5xx")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  c.add_option("--rescore-dtype", o.dtype,
               "What the reference engine computes in (its --dtype); needed with --rescore-endpoint: its rounding widens the "
               "near-tie thresholds and support margins");
}

EngineRescorer engine_rescorer(const RescoreEndpointFlags& o, const std::string& endpoint, const std::string& flag) {
  if (o.api == "openai")
    throw InputError("--rescore-api openai: OpenAI's completions API returns no prompt log-probabilities by token id; use vllm "
                     "(vLLM, specgate serve) or sglang");
  if (o.vocab_size == 0) throw InputError(flag + ": needs --rescore-vocab-size (the model's config.json vocab_size)");
  if (o.dtype.empty())
    throw InputError(flag + ": needs --rescore-dtype, what the engine computes in (float32, bfloat16...): its rounding "
                     "sizes the near-tie thresholds and support margins");
  dtype_from_name(o.dtype, "--rescore-dtype");
  EngineLogitsOptions options{.endpoint = parse_endpoint(endpoint), .dialect = dialect_from_name(o.api), .model = o.model,
                              .top_k = o.top_k, .vocab_size = o.vocab_size, .eos_token_ids = o.eos_ids,
                              .concurrency = o.concurrency, .http = o.http, .retries = o.retries};
  if (!options.dialect->gives_prompt_logprobs())
    throw InputError("--rescore-api " + o.api + ": this API returns no prompt log-probabilities");
  if (!o.cache.empty()) options.cache = o.cache;
  const ServerListing listing = check_server(options.endpoint, *options.dialect, o.model, o.http);
  if (options.model.empty()) {
    if (listing.models.empty()) throw InputError(flag + ": the server lists no model; give --rescore-model");
    options.model = listing.models.front();
  }
  auto logits = std::make_unique<EngineLogits>(std::move(options));
  const EngineLogits* counters = logits.get();
  return {std::make_unique<Rescorer>(std::move(logits)), counters};
}

void print_rescore_cost(const EngineRescorer& engine, const std::string& what) {
  const EngineLogitsCost cost = engine.logits->cost();
  std::fprintf(stderr,
               "conformance: %s: %lld requests (%lld retries, %lld replies from the cache), %lld positions scored, %lld reply "
               "bytes, %.2f s waiting\n",
               what.c_str(), static_cast<long long>(cost.requests), static_cast<long long>(cost.retries),
               static_cast<long long>(cost.cached), static_cast<long long>(cost.scored_tokens),
               static_cast<long long>(cost.reply_bytes), cost.seconds);
}

}  // namespace specgate::cli
