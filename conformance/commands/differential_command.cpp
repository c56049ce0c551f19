#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/collect/server_check.h"
#include "conformance/commands/commands.h"
#include "conformance/commands/model_flags.h"
#include "conformance/commands/rescore_flags.h"
#include "conformance/commands/seed_check.h"
#include "conformance/commands/server_flags.h"
#include "conformance/commands/verdict.h"
#include "conformance/differential/differential.h"
#include "conformance/differential/differential_report.h"
#include "conformance/files/output_file.h"
#include "impl/bench/chat_template.h"
#include "impl/common/error.h"
#include "impl/reports/report_text.h"
#include "impl/scoring/rescorer.h"

namespace specgate::cli {
namespace {

struct DifferentialOptions {
  ServerFlags server;
  std::string spec_off_endpoint;
  std::filesystem::path out_dir, json, markdown, html, junit;
  CrowdSettings crowd;
  int64_t filler_chars = 2000;
  double near_tie_threshold = 0.1;
  bool near_ties_fail = false;
  double logprob_tolerance = 0.05;
  int64_t prompt_logprobs = 0;
  std::filesystem::path rescore_with;
  ModelFlags rescore{.dtype = "float32"};
  RescoreEndpointFlags engine;
};

void print_summary(const DifferentialReport& report) {
  for (const ScheduleOutcome& o : report.schedules) {
    std::printf("%-12s %3lld in flight%s%s%s%s: %lld answers", o.schedule.name.c_str(), static_cast<long long>(o.schedule.in_flight),
                o.schedule.shuffled ? ", shuffled" : "", o.schedule.fillers > 0 ? ", fillers" : "",
                o.schedule.stagger_seconds > 0 ? ", staggered" : "", o.schedule.streamed ? ", streamed" : "",
                static_cast<long long>(o.questions));
    if (&o != &report.schedules.front())
      std::printf(", %lld identical, %lld hard, %lld near-tie, %lld unattributed, %lld length, %lld missing",
                  static_cast<long long>(o.identical), static_cast<long long>(o.divergences.hard),
                  static_cast<long long>(o.divergences.near_tie), static_cast<long long>(o.divergences.unattributed),
                  static_cast<long long>(o.divergences.length), static_cast<long long>(o.missing));
    std::printf(" (%.1f s)\n", o.seconds);
    if (!o.chunk_sizes.empty()) {
      std::printf("%-12s chunks by the tokens they carried:", "");
      for (const auto& [tokens, chunks] : o.chunk_sizes) std::printf(" %lld: %lld", static_cast<long long>(tokens), static_cast<long long>(chunks));
      std::printf("\n");
    }
  }
  if (report.counters) std::printf("%s\n", counters_line(*report.counters).c_str());
  if (const auto warning = coverage_warning_of(report))
    std::printf("WARNING: %s\n", warning->c_str());
  std::printf("gate %s\n", report.gate.passed ? "passed" : "FAILED:");
  for (const std::string& reason : report.gate.reasons) std::printf("  - %s\n", reason.c_str());
}

void run_differential_command(const DifferentialOptions& o, const CLI::App& command) {
  std::unique_ptr<Dialect> dialect;
  std::unique_ptr<Tokenizer> tokenizer;
  DifferentialJob job{.collect = server_job(o.server, command, dialect, tokenizer), .filler_chars = o.filler_chars,
                      .out_dir = o.out_dir, .bench = o.server.bench, .near_ties_fail = o.near_ties_fail};
  if (!o.spec_off_endpoint.empty()) job.spec_off = parse_endpoint(o.spec_off_endpoint);
  if (o.prompt_logprobs > 0 && !dialect->gives_prompt_logprobs())
    throw InputError("--prompt-logprobs: the " + o.server.api + " API does not report prompt log-probabilities (vllm and sglang do)");
  job.collect.defaults.prompt_logprobs = o.prompt_logprobs;
  CrowdSettings crowd = o.crowd;
  crowd.fillers_asked = command.count("--fillers") > 0;
  if (crowd.stream && (job.collect.defaults.top_logprobs > 0 || o.prompt_logprobs > 0))
    throw InputError("--stream: log-probabilities are not read from streams; leave out --top-logprobs and --prompt-logprobs");
  job.schedules = plan_schedules(crowd);
  if (!(o.near_tie_threshold >= 0.0 && std::isfinite(o.near_tie_threshold)))
    throw InputError("--near-tie-threshold: must be a finite number of nats >= 0, got " + short_number(o.near_tie_threshold));
  job.score.near_tie_threshold = o.near_tie_threshold;
  job.score.near_tie_by_dtype = command.count("--near-tie-threshold") == 0;
  if (!(o.logprob_tolerance >= 0.0 && std::isfinite(o.logprob_tolerance)))
    throw InputError("--logprob-tolerance: must be a finite number of nats >= 0, got " + short_number(o.logprob_tolerance));
  job.logprob_tolerance = o.logprob_tolerance;
  job.score.turns = o.server.turns == "all" ? TurnScope::kAll : TurnScope::kFirst;
  std::optional<Rescorer> rescorer;
  EngineRescorer engine;
  if (!o.rescore_with.empty() && o.engine.given()) throw InputError("--rescore-with or --rescore-endpoint: give one of them");
  if (o.engine.given()) {
    job.score.rescore_endpoint = o.engine.endpoint;
    job.score.rescore_api = o.engine.api;
    job.score.rescore_top_k = o.engine.top_k;
    job.score.rescore_dtype = o.engine.dtype;
    engine = engine_rescorer(o.engine, o.engine.endpoint, "--rescore-endpoint");
    job.rescorer = engine.rescorer.get();
  }
  if (!o.rescore_with.empty()) {
    const ChatTemplate chat_template = chat_template_from_name(o.server.chat_template, "--chat-template");
    job.score.rescore_with = o.rescore_with;
    job.score.rescore_chat_template = std::string(chat_template_name(chat_template));
    job.score.rescore_dtype = o.rescore.dtype;
    job.score.rescore_device = o.rescore.device;
    rescorer.emplace(o.rescore_with, o.rescore.scalar_type(), o.rescore.torch_device(), chat_template);
    job.rescorer = &*rescorer;
  } else {
    for (const char* flag : {"--dtype", "--device"})
      if (command.count(flag) > 0) throw InputError(std::string(flag) + ": only used with --rescore-with DIR");
  }
  job.collect.server = check_server(job.collect.endpoint, *dialect, job.collect.defaults.model, job.collect.http).server;
  if (job.spec_off) check_server(*job.spec_off, *dialect, job.collect.defaults.model, job.collect.http);
  const std::optional<SpeculationCounters> before = read_speculation_counters(job.collect.endpoint);
  DifferentialReport report = run_differential(job, crowd);
  const std::optional<SpeculationCounters> after = before ? read_speculation_counters(job.collect.endpoint) : std::nullopt;
  if (after) report.counters = counted_between(*before, *after);
  const std::vector<NamedInput> inputs = {{"--bench", o.server.bench}, {"--target", o.server.target}, {"--rescore-with", o.rescore_with}};
  if (engine.rescorer) print_rescore_cost(engine, "re-scored through " + o.engine.endpoint);
  print_summary(report);
  std::fflush(stdout);
  write_reports({{"--json", o.json, [&](std::ostream& out) { out << differential_report_json(report).dump(2) << "\n"; }},
                 {"--markdown", o.markdown, [&](std::ostream& out) { write_differential_markdown(report, out); }},
                 {"--html", o.html, [&](std::ostream& out) { write_differential_html(report, out); }},
                 {"--junit", o.junit, [&](std::ostream& out) { write_differential_junit(report, out); }}},
                inputs);
  if (!report.gate.passed) throw Verdict();
}

}  // namespace

void add_differential_command(CLI::App& app) {
  auto o = std::make_shared<DifferentialOptions>();
  CLI::App* c = app.add_subcommand(
      "differential",
      "Ask a running server every question alone, then again in crowds that vary what else it serves (requests in "
      "flight, order, long prompts, arrival times), greedy; every answer that changes is attributed, and what the "
      "server reports besides tokens (usage, log-probabilities) is checked; exit 1 when an answer changes beyond a "
      "near-tie or a report cannot be right, 2 on bad input");
  add_server_flags(*c, o->server);
  c->add_option("--out-dir", o->out_dir, "Folder for each schedule's answers (<schedule>.jsonl)")->required();
  c->add_option("--spec-off-endpoint", o->spec_off_endpoint,
                "The same model served with speculation off: its answers alone are one more schedule");
  c->add_option("--crowds", o->crowd.crowds, "Crowd schedules after the one alone")->capture_default_str()->check(CLI::Range(1, 64));
  c->add_option("--max-in-flight", o->crowd.max_in_flight, "Most requests a crowd sends at once (above the server's batch: queueing and preemption)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  c->add_option("--fillers", o->crowd.fillers, "Long-prompt requests sent among the questions in crowds that have them: crowd 2, "
                "later crowds drawn, and the one crowd of --crowds 1 when given")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  c->add_option("--filler-chars", o->filler_chars, "Length of each filler prompt (long prompts force chunked prefill)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--stagger", o->crowd.stagger_seconds, "Most seconds a request of a staggered crowd waits before it is sent")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 60.0));
  c->add_flag("--stream", o->crowd.stream,
              "Read every schedule after the one alone from streams (server-sent events), stream-alone first, and "
              "check each streamed answer against the same question answered whole: token ids, text, the text of its "
              "ids, finish reason, usage; report how many tokens each chunk carried");
  c->add_option("--seed", o->crowd.seed, "Draws the crowds: the same seed sends the same schedules")
      ->capture_default_str()
      ->check(seed_check());
  c->add_option("--near-tie-threshold", o->near_tie_threshold,
                "A difference whose margin |logprob(alone) - logprob(crowd)| is at most this many nats is a near-tie; "
                "by default widened, as score's, where the answers record a lower-precision run.dtype or the re-scorer "
                "computes in one")
      ->capture_default_str();
  c->add_flag("--near-ties-fail", o->near_ties_fail, "Fail the gate on near-ties too");
  c->add_option("--prompt-logprobs", o->prompt_logprobs,
                "Prompt log-probabilities asked per prompt token (vllm's prompt_logprobs; 0: none), checked like the "
                "answers'")
      ->check(CLI::Range(0, 20));
  c->add_option("--logprob-tolerance", o->logprob_tolerance,
                "Most nats between two log-probabilities of one token: the server's and the target's (--rescore-with), "
                "speculation on and off's")
      ->capture_default_str();
  c->add_option("--rescore-with", o->rescore_with,
                "Target checkpoint folder that attributes differences the alone answers' top_logprobs cannot");
  add_model_flags(*c, o->rescore, "dtype of the re-scoring model (float32 by default, as score's)");
  add_rescore_endpoint_flags(*c, o->engine,
                             "attribution and the log-probability checks need the top 1 (the candidate, where not "
                             "among them, is asked on its own)");
  c->add_option("--json", o->json, "Write the JSON report here (reports/schema/differential_report.schema.json)");
  c->add_option("--markdown", o->markdown, "Write a Markdown summary here");
  c->add_option("--html", o->html, "Write a self-contained HTML report here");
  c->add_option("--junit", o->junit, "Write a JUnit XML report here");
  c->callback([o, c] { run_differential_command(*o, *c); });
}

}  // namespace specgate::cli
