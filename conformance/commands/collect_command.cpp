#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>

#include "conformance/collect/collector.h"
#include "conformance/collect/server_check.h"
#include "conformance/collect/server_counters.h"
#include "conformance/commands/commands.h"
#include "conformance/commands/interrupted.h"
#include "conformance/commands/sampling_flags.h"
#include "conformance/commands/server_flags.h"
#include "conformance/files/output_file.h"
#include "impl/common/counted.h"
#include "impl/common/error.h"

namespace specgate::cli {
namespace {

struct CollectOptions {
  ServerFlags server;
  std::filesystem::path out, counters;
  SamplingParams sampling;
  int64_t concurrency = 1;
  bool resume = false;
  int64_t samples = 1;
  bool stream = false;
  std::string engine_dtype;
  bool tokenizer_from_server = false;
};

void run_collect(const CollectOptions& o, const CLI::App& command) {
  std::unique_ptr<Dialect> dialect;
  std::unique_ptr<Tokenizer> tokenizer;
  CollectJob job = server_job(o.server, command, dialect, tokenizer);
  const std::string& api = o.server.api;
  const SamplingParams& sent = o.sampling;
  validate(sent);
  job.defaults.temperature = sent.temperature;
  if (command.count("--top-k") > 0) job.defaults.top_k = sent.top_k;
  if (command.count("--top-p") > 0) job.defaults.top_p = sent.top_p;
  if (command.count("--min-p") > 0) {
    if (!dialect->takes_min_p()) throw InputError("--min-p: the " + api + " API has no min_p");
    job.defaults.min_p = sent.min_p;
  }
  if (command.count("--seed") > 0) job.defaults.seed = sent.seed;
  if (o.stream) {
    if (job.defaults.top_logprobs > 0) throw InputError("--stream: log-probabilities are not read from streams; leave out --top-logprobs");
    job.defaults.stream = true;
  }
  if (o.tokenizer_from_server) {
    if (!o.server.target.empty()) throw InputError("--tokenizer-from-server: the server tokenizes; leave out --target");
    if (!dialect->gives_prompt_token_ids() || !dialect->gives_token_ids() || o.stream)
      throw InputError("--tokenizer-from-server: the " + api + " API" + (o.stream ? " streamed" : "") +
                       " does not give back the prompt's and the answer's token ids; use vllm, vllm-chat or sglang-chat");
    job.ids_from_server = true;
  }
  job.concurrency = o.concurrency;
  job.out = o.out;
  job.resume = o.resume;
  if (o.samples > 1 && !job.defaults.seed)
    throw InputError("--samples: give --seed; each sample is sent, and records, a seed of its own");
  if (o.samples > 1 && o.sampling.temperature == 0.0) throw InputError("--samples: greedy decoding (--temperature 0) has one answer");
  job.samples = o.samples;
  if (command.count("--engine-dtype") > 0) job.dtype = o.engine_dtype;
  check_output_path("--out", job.out, job.inputs);
  job.server = check_server(job.endpoint, *dialect, job.defaults.model, job.http).server;

  if (!o.counters.empty()) {
    if (o.resume) throw InputError("--counters: the server's counters cover one run, and --resume keeps earlier runs' answers");
    check_output_path("--counters", o.counters, job.inputs);
    if (o.counters == o.out) throw InputError("--counters: the same file as --out");
  }
  const std::optional<SpeculationCounters> before = read_speculation_counters(job.endpoint);
  if (!o.counters.empty() && !before)
    throw InputError("--counters: " + o.server.endpoint + " has no speculation counters at GET /metrics");
  const CollectResult result = collect_answers(job);
  std::printf("collect: %lld answers written, %lld already in %s\n", static_cast<long long>(result.written),
              static_cast<long long>(result.skipped), o.out.string().c_str());
  const std::optional<SpeculationCounters> after = before ? read_speculation_counters(job.endpoint) : std::nullopt;
  if (const auto run = after ? counted_between(*before, *after) : std::nullopt) {
    std::printf("%s (the run's, and any other client's)\n", counters_line(*run).c_str());
    if (run->drafts > 0 && !result.answers_report_drafts && (api == "vllm" || api == "vllm-chat"))
      std::printf("the answers carry no drafts of their own: started with --per-request-spec-decode-metrics detailed, "
                  "vLLM reports each answer's rounds, which acceptance and score's accepted/drafted read\n");
  }
  if (!o.counters.empty() && !result.error && !result.interrupted) {
    const auto run = after ? counted_between(*before, *after) : std::nullopt;
    if (!run) throw InputError("--counters: the server's counters went back during the run (it restarted); nothing written");
    write_output_file("--counters", o.counters, [&](std::ostream& out) { out << speculation_counters_json(*run).dump(2) << "\n"; },
                      job.inputs);
    std::printf("wrote %s\n", o.counters.string().c_str());
  }
  std::fflush(stdout);
  const int64_t asked = static_cast<int64_t>(job.questions.size()) * job.samples;
  const std::string left = counted(asked - result.written - result.skipped, "answer") + " left; --resume continues";
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
  add_server_flags(*c, o->server);
  c->add_option("--out", o->out, "Answer JSONL to write")->required();
  add_sampling_flags(*c, o->sampling, SamplingUse::kSend);
  c->add_option("--concurrency", o->concurrency, "Requests in flight")->capture_default_str()->check(CLI::Range(1, 1024));
  c->add_option("--counters", o->counters,
                "Write the server's speculation counters over the run (GET /metrics before and after; vLLM's drafts "
                "accepted per draft position) as JSON here, for acceptance --server-counters; the run must be the "
                "server's only traffic");
  c->add_flag("--resume", o->resume, "Skip the questions --out already answers, and append");
  c->add_flag("--tokenizer-from-server", o->tokenizer_from_server,
              "No local model: send the prompts as text or messages and record the prompt_token_ids and token_ids the "
              "server gives back (vllm, vllm-chat, sglang-chat), so that score, sampling and acceptance re-score through "
              "--rescore-endpoint; a turn without them fails the question");
  c->add_option("--samples", o->samples,
                "Ask every question N times, sample j of the q-th question with seed --seed + q * N + j")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--engine-dtype", o->engine_dtype,
                "The server's floating-point type, recorded in every answer's run.dtype, from which score, sampling and "
                "acceptance size their near-tie thresholds and support margins")
      ->check(CLI::IsMember({"float64", "float32", "bfloat16", "float16"}));
  c->add_flag("--stream", o->stream,
              "Ask for server-sent events and put each answer together from its chunks; each turn records when "
              "each chunk came and how many tokens it carried (chunk_seconds, chunk_tokens)");
  c->callback([o, c] { run_collect(*o, *c); });
}

}  // namespace specgate::cli
