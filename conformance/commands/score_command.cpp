#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/model_flags.h"
#include "conformance/commands/rescore_flags.h"
#include "conformance/commands/verdict.h"
#include "conformance/files/output_file.h"
#include "conformance/terminal/progress_bar.h"
#include "impl/bench/chat_template.h"
#include "impl/common/counted.h"
#include "impl/common/device.h"
#include "impl/common/dtype.h"
#include "impl/common/error.h"
#include "impl/model/config.h"
#include "impl/reports/html_report.h"
#include "impl/reports/json_report.h"
#include "impl/reports/junit_report.h"
#include "impl/reports/markdown_report.h"
#include "impl/reports/report_text.h"
#include "impl/scoring/rescorer.h"
#include "impl/scoring/scorer.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {
namespace {

struct ScoreOptions {
  std::filesystem::path reference, candidate, bench;
  std::filesystem::path json, junit, markdown, html;
  double min_exact = 1.0;
  double min_partial = 0.0;
  int64_t max_hard_divergences = -1;
  double min_tokens_per_pass = 0.0;
  double min_speedup = 0.0;
  int64_t min_coverage = 0;
  double near_tie_threshold = 0.1;
  std::string turns = "all";
  std::filesystem::path rescore_with;
  ModelFlags rescore{.dtype = "float32"};
  RescoreEndpointFlags engine;
  std::string chat_template = "raw";
  std::filesystem::path tokenizer;
  std::vector<int64_t> eos_ids;
};

void check_fraction(double value, const char* flag) {
  if (!(value >= 0.0 && value <= 1.0))
    throw InputError(std::string(flag) + ": must be a fraction in [0, 1], got " + short_number(value));
}

ScoreSettings settings_from(const ScoreOptions& o, const CLI::App& command) {
  ScoreSettings settings;
  if (o.turns != "all" && o.turns != "first") throw InputError("--turns: expected all or first, got '" + o.turns + "'");
  settings.turns = o.turns == "all" ? TurnScope::kAll : TurnScope::kFirst;
  if (!(o.near_tie_threshold >= 0.0 && std::isfinite(o.near_tie_threshold)))
    throw InputError("--near-tie-threshold: must be a finite number of nats >= 0, got " + short_number(o.near_tie_threshold));
  settings.near_tie_threshold = o.near_tie_threshold;
  settings.near_tie_by_dtype = command.count("--near-tie-threshold") == 0;
  for (int64_t id : o.eos_ids) {
    if (id < 0) throw InputError("--eos-id: expected a token id (a non-negative integer), got " + std::to_string(id));
  }
  check_fraction(o.min_exact, "--min-exact");
  check_fraction(o.min_partial, "--min-partial");
  settings.gate.min_exact = o.min_exact;
  settings.gate.min_partial = o.min_partial;
  if (command.count("--max-hard-divergences") > 0) {
    if (o.max_hard_divergences < 0)
      throw InputError("--max-hard-divergences: must be >= 0, got " + std::to_string(o.max_hard_divergences));
    settings.gate.max_hard_divergences = o.max_hard_divergences;
  }
  const auto positive = [&command](double value, const char* flag, std::optional<double>& gate) {
    if (command.count(flag) == 0) return;
    if (!(value > 0.0 && std::isfinite(value)))
      throw InputError(std::string(flag) + ": must be a finite number > 0, got " + short_number(value));
    gate = value;
  };
  positive(o.min_tokens_per_pass, "--min-tokens-per-pass", settings.gate.min_tokens_per_pass);
  positive(o.min_speedup, "--min-speedup", settings.gate.min_speedup);
  if (command.count("--min-coverage") > 0) settings.gate.min_coverage = o.min_coverage;
  const bool rescoring = !o.rescore_with.empty();
  for (const char* flag : {"--dtype", "--device"}) {
    if (!rescoring && command.count(flag) > 0) throw InputError(std::string(flag) + ": only used with --rescore-with DIR");
  }
  if (!rescoring && command.count("--chat-template") > 0)
    throw InputError("--chat-template: only used with --rescore-with DIR (it builds the prompts re-scored)");
  if (rescoring && o.engine.given()) throw InputError("--rescore-with or --rescore-endpoint: give one of them");
  if (o.engine.given()) {
    settings.rescore_endpoint = o.engine.endpoint;
    settings.rescore_api = o.engine.api;
    settings.rescore_top_k = o.engine.top_k;
    settings.rescore_dtype = o.engine.dtype;
  }
  if (rescoring) {
    settings.rescore_with = o.rescore_with;
    settings.rescore_chat_template = std::string(chat_template_name(chat_template_from_name(o.chat_template, "--chat-template")));
    settings.rescore_dtype = o.rescore.dtype;
    settings.rescore_device = o.rescore.device;
  }
  return settings;
}

void print_summary(const ScoreReport& report, double seconds) {
  const GroupSummary& all = report.overall;
  const DivergenceCounts& d = all.divergences;
  std::printf("score: %lld questions, exact %lld (%s), partial %s, unit %s; divergences: %lld hard, %lld near-tie, "
              "%lld unattributed, %lld length; ids: %zu missing, %zu unexpected (%.2f s)\n",
              static_cast<long long>(all.questions), static_cast<long long>(all.exact), optional_percent(all.exact_match).c_str(),
              optional_percent(all.partial_match).c_str(), unit_summary(all).c_str(), static_cast<long long>(d.hard),
              static_cast<long long>(d.near_tie), static_cast<long long>(d.unattributed), static_cast<long long>(d.length),
              report.missing_ids.size(), report.unexpected_ids.size(), seconds);
  if (!report.prompt_mismatch_ids.empty())
    std::printf("prompts: %s answered from different prompts on the two sides, not compared (first: question "
                "%lld)\n",
                counted(static_cast<int64_t>(report.prompt_mismatch_ids.size()), "question").c_str(),
                static_cast<long long>(report.prompt_mismatch_ids.front()));
  if (const std::string line = run_length_summary(report); !line.empty()) std::printf("%s\n", line.c_str());
  if (const std::string line = near_tie_summary(report); !line.empty()) std::printf("%s\n", line.c_str());
  const SpeedSummary& speed = all.speed;
  if (speed.any())
    std::printf("speed: %s tokens per target pass, accepted/drafted %s; per request: reference %s tokens/s, candidate %s "
                "tokens/s, speedup %s\n",
                optional_figure(speed.tokens_per_pass).c_str(),
                optional_percent(speed.acceptance).c_str(),
                optional_figure(speed.reference_tokens_per_second).c_str(),
                optional_figure(speed.candidate_tokens_per_second).c_str(), optional_figure(speed.speedup, "x").c_str());
  if (const std::string line = run_throughput_line(report); !line.empty()) std::printf("%s\n", line.c_str());
  const CoverageText coverage = coverage_text(report.candidate_coverage);
  if (coverage.line) std::printf("%s\n", coverage.line->c_str());
  if (coverage.warning) std::printf("WARNING: %s\n", coverage.warning->c_str());
  for (const std::string& line : stream_lines(report)) std::printf("%s\n", line.c_str());
  std::printf("gate %s\n", report.gate.passed ? "passed" : "FAILED:");
  for (const std::string& reason : report.gate.reasons) std::printf("  - %s\n", reason.c_str());
}

// The EOS ids of a checkpoint folder: its generation_config.json / config.json when it has a
// config.json, and its tokenizer's EOS.
void add_checkpoint_eos_ids(const std::filesystem::path& dir, const Tokenizer& tokenizer, std::vector<int64_t>& eos_ids) {
  if (std::filesystem::exists(dir / "config.json")) {
    for (int64_t id : read_eos_token_ids(dir, read_model_config(dir / "config.json"))) eos_ids.push_back(id);
  }
  if (tokenizer.special_tokens().eos) eos_ids.push_back(*tokenizer.special_tokens().eos);
  std::sort(eos_ids.begin(), eos_ids.end());
  eos_ids.erase(std::unique(eos_ids.begin(), eos_ids.end()), eos_ids.end());
}

void run_score(const ScoreOptions& o, const CLI::App& command) {
  const auto start = std::chrono::steady_clock::now();
  ScoreRequest request{.reference = o.reference, .candidate = o.candidate, .settings = settings_from(o, command)};
  if (!o.bench.empty()) request.bench = o.bench;
  std::unique_ptr<Tokenizer> tokenizer;
  request.settings.eos_ids = o.eos_ids;
  if (!o.tokenizer.empty()) {
    tokenizer = load_tokenizer(o.tokenizer);
    add_checkpoint_eos_ids(o.tokenizer, *tokenizer, request.settings.eos_ids);
    request.tokenizer = tokenizer.get();
  }
  std::optional<Rescorer> rescorer;
  if (request.settings.rescore_with) {
    rescorer.emplace(o.rescore_with, o.rescore.scalar_type(), o.rescore.torch_device(),
                     chat_template_from_name(o.chat_template, "--chat-template"));
    request.rescorer = &*rescorer;
  }
  EngineRescorer engine;
  if (o.engine.given()) {
    engine = engine_rescorer(o.engine, o.engine.endpoint, "--rescore-endpoint");
    request.rescorer = engine.rescorer.get();
  }
  std::optional<ProgressBar> progress;
  request.progress = progress_in(progress, "score");
  const ScoreReport report = score_answers(request);
  progress.reset();
  // Where the prompts of what was re-scored came from; nothing when nothing was.
  std::vector<std::string> sources;
  if (report.rescored_from_answer_prompts > 0)
    sources.push_back(std::to_string(report.rescored_from_answer_prompts) + " from the reference answers' prompt_token_ids");
  if (report.rescored_from_template > 0)
    sources.push_back(std::to_string(report.rescored_from_template) + " built from the bench with " + o.rescore_with.string() +
                      "'s tokenizer and chat template " + request.settings.rescore_chat_template);
  if (engine.rescorer) print_rescore_cost(engine, "re-scored through " + o.engine.endpoint);
  if (!sources.empty())
    std::fprintf(stderr, "conformance: re-scored prompts: %s\n",
                 (sources[0] + (sources.size() > 1 ? ", " + sources[1] : "")).c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  print_summary(report, seconds);
  std::fflush(stdout);
  write_reports({{"--json", o.json, [&](std::ostream& out) { out << score_report_json(report).dump(2) << "\n"; }},
                 {"--junit", o.junit, [&](std::ostream& out) { write_junit_report(report, out); }},
                 {"--markdown", o.markdown, [&](std::ostream& out) { write_markdown_report(report, out); }},
                 {"--html", o.html, [&](std::ostream& out) { write_html_report(report, out); }}},
                {{"--reference", o.reference}, {"--candidate", o.candidate}, {"--bench", o.bench},
                 {"--rescore-with", o.rescore_with}, {"--tokenizer", o.tokenizer}});
  if (!report.gate.passed) throw Verdict();
}

}  // namespace

void add_score_command(CLI::App& app) {
  auto o = std::make_shared<ScoreOptions>();
  CLI::App* c = app.add_subcommand(
      "score",
      "Score candidate answers against reference answers question by question; exit 0 when the gate passes, 1 when "
      "it fails, 2 on bad input");
  c->add_option("--reference", o->reference, "Reference answers (JSONL: Spec-Bench, specgate or plain form)")->required();
  c->add_option("--candidate", o->candidate, "Candidate answers to score (same forms)")->required();
  c->add_option("--bench", o->bench,
                "Spec-Bench question.jsonl: categories for plain answers, prompts for --rescore-with where the reference "
                "answers carry no prompt_token_ids");
  c->add_option("--json", o->json, "Write the JSON report here (reports/schema/score_report.schema.json)");
  c->add_option("--junit", o->junit, "Write a JUnit XML report here");
  c->add_option("--markdown", o->markdown, "Write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)");
  c->add_option("--html", o->html, "Write a self-contained HTML report here");
  c->add_option("--min-exact", o->min_exact, "Gate: fraction of questions answered exactly")->capture_default_str();
  c->add_option("--min-partial", o->min_partial, "Gate: mean partial match (LCP / reference length)")->capture_default_str();
  c->add_option("--max-hard-divergences", o->max_hard_divergences, "Gate: most hard divergences allowed (default: any)");
  c->add_option("--min-tokens-per-pass", o->min_tokens_per_pass,
                "Gate: the candidate's tokens per target pass, overall (fails when the answers cannot give it)");
  c->add_option("--min-speedup", o->min_speedup,
                "Gate: the candidate's tokens/s over the reference's, overall (fails when the answers cannot give it)");
  c->add_option("--min-coverage", o->min_coverage,
                "Gate: the fewest realignments the candidate's answers must sum to (the seeded layout faults need " +
                    std::to_string(kLayoutFaultRealignments) + " to show 95% of the time; fails when the answers do "
                    "not count them)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--near-tie-threshold", o->near_tie_threshold,
                "A divergence whose margin |logprob(ref) - logprob(cand)| is at most this many nats is a near-tie; "
                "by default widened per question to what the rounding of both answers' run.dtype and the re-scorer's "
                "dtype can flip (bfloat16, float16), fixed when given")
      ->capture_default_str();
  c->add_option("--turns", o->turns, "Score all turns of choices[0], in order, or only the first (all: every turn the answers hold; "
                "generate and collect write the first unless given --turns all)")->capture_default_str();
  c->add_option("--rescore-with", o->rescore_with,
                "Target checkpoint folder that re-scores divergences the reference's top_logprobs cannot attribute");
  add_model_flags(*c, o->rescore, "dtype of the re-scoring model (float32 by default, as generate's: a margin "
                                   "is judged against a near-tie threshold far above float32's rounding)");
  add_rescore_endpoint_flags(*c, o->engine,
                             "a divergence needs the reference token's log-probability and the candidate's (a second "
                             "request where the candidate is not in the first's top k): top 1 suffices; the reference "
                             "answers must carry prompt_token_ids");
  c->add_option("--chat-template", o->chat_template,
                "Prompts re-scored where the reference answer has no prompt_token_ids: raw, vicuna, chatml, smollm2, "
                "llama3 or llama2")
      ->capture_default_str();
  c->add_option("--tokenizer", o->tokenizer,
                "Checkpoint folder: its EOS ids (a trailing EOS kept by one side only is not a divergence) and the "
                "decoded text around each first divergence in the reports");
  c->add_option("--eos-id", o->eos_ids, "An EOS token id (repeatable): a trailing one kept by one side only is not a "
                                        "divergence");
  c->callback([o, c] { run_score(*o, *c); });
}

}  // namespace specgate::cli
