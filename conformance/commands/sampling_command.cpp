#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/model_flags.h"
#include "conformance/commands/rescore_flags.h"
#include "conformance/commands/sampling_flags.h"
#include "conformance/commands/seed_check.h"
#include "conformance/commands/verdict.h"
#include "conformance/files/output_file.h"
#include "conformance/terminal/progress_bar.h"
#include "impl/bench/chat_template.h"
#include "impl/common/dtype.h"
#include "impl/common/error.h"
#include "impl/reports/sampling_report.h"
#include "impl/scoring/answer_reader.h"
#include "impl/scoring/rescorer.h"
#include "impl/scoring/sampling_check.h"

namespace specgate::cli {
namespace {

struct SamplingOptions {
  std::vector<std::filesystem::path> answers, baseline;
  std::filesystem::path target;
  std::filesystem::path json, junit, markdown, html;
  double alpha = 0.05;
  uint64_t pit_seed = 0;
  SamplingParams warpers;
  std::string turns = "all";
  SupportMarginFlags margin;
  double support_mass_margin = 0.0;
  int64_t permutations = 1999;
  ModelFlags loading{.dtype = "float64"};
  RescoreEndpointFlags engine;
};

void run_sampling(const SamplingOptions& o, const CLI::App& command) {
  if (o.turns != "all" && o.turns != "first") throw InputError("--turns: expected all or first, got '" + o.turns + "'");
  if (o.target.empty() != o.engine.given()) throw InputError("--target or --rescore-endpoint: give one of them");
  std::vector<std::filesystem::path> every_file = o.answers;
  every_file.insert(every_file.end(), o.baseline.begin(), o.baseline.end());
  const TurnScope turns = o.turns == "all" ? TurnScope::kAll : TurnScope::kFirst;
  const std::optional<double> mass_margin =
      command.count("--support-mass-margin") > 0 ? std::optional(o.support_mass_margin) : std::nullopt;
  EngineRescorer engine;
  if (o.engine.given()) engine = engine_rescorer(o.engine, o.engine.endpoint, "--rescore-endpoint");
  const SupportMargin margin =
      resolve_support_margin(given_engine_dtype(o.margin, command), given_support_margin(o.margin, command), mass_margin,
                             o.engine.given() ? o.engine.dtype : dtype_name(o.loading.scalar_type()), every_file, turns);
  // The Rescorer's prompts are the answers' own prompt_token_ids; its template goes unused.
  std::unique_ptr<Rescorer> checkpoint;
  if (!engine.rescorer)
    checkpoint = std::make_unique<Rescorer>(o.target, o.loading.scalar_type(), o.loading.torch_device(), ChatTemplate::kRaw);
  // A correct engine of another dtype than the re-scorer's sits on the support's boundary as
  // often as the checkpoint in that dtype does.
  std::optional<Rescorer> in_engine_dtype;
  if (checkpoint && !margin.engine_dtype.empty() &&
      dtype_from_name(margin.engine_dtype, "--engine-dtype") != o.loading.scalar_type())
    in_engine_dtype.emplace(o.target, dtype_from_name(margin.engine_dtype, "--engine-dtype"), o.loading.torch_device(),
                            ChatTemplate::kRaw);
  std::optional<ProgressBar> progress;
  const SamplingCheckReport report = check_sampling({.answers = o.answers,
                                                     .baseline = o.baseline,
                                                     .rescorer = engine.rescorer ? engine.rescorer.get() : checkpoint.get(),
                                                     .in_engine_dtype = in_engine_dtype ? &*in_engine_dtype : nullptr,
                                                     .sampling = given_warpers(o.warpers, command),
                                                     .alpha = o.alpha,
                                                     .pit_seed = command.count("--pit-seed") > 0
                                                                     ? o.pit_seed
                                                                     : derived_pit_seed(o.answers, o.baseline),
                                                     .turns = turns,
                                                     .margin = margin,
                                                     .permutations = o.permutations,
                                                     .progress = progress_in(progress, "sampling")});
  progress.reset();
  std::vector<NamedInput> inputs = {{"--target", o.target}};
  for (const auto& path : o.answers) inputs.emplace_back("--answers", path);
  for (const auto& path : o.baseline) inputs.emplace_back("--baseline", path);
  if (engine.rescorer) print_rescore_cost(engine, "re-scored through " + o.engine.endpoint);
  write_sampling_summary(report, std::cout);
  write_reports({{"--json", o.json, [&](std::ostream& out) { out << sampling_report_json(report).dump(2) << "\n"; }},
                 {"--junit", o.junit, [&](std::ostream& out) { write_sampling_junit(report, out); }},
                 {"--markdown", o.markdown, [&](std::ostream& out) { write_sampling_markdown(report, out); }},
                 {"--html", o.html, [&](std::ostream& out) { write_sampling_html(report, out); }}},
                inputs);
  if (report.rejected) throw Verdict();
}

}  // namespace

void add_sampling_command(CLI::App& app) {
  auto o = std::make_shared<SamplingOptions>();
  CLI::App* c = app.add_subcommand(
      "sampling",
      "Test sampled answers against the target's distribution (randomised PIT, Kolmogorov-Smirnov, Holm over "
      "subtasks); exit 0 when they pass, 1 when rejected, 2 on bad input");
  c->add_option("--answers", o->answers,
                "The engine's sampled answers with token_ids and prompt_token_ids (repeatable: one file per seed)")
      ->required();
  c->add_option("--baseline", o->baseline,
                "The same engine's answers with speculation off (repeatable): the verdict becomes the two-sample test");
  c->add_option("--target", o->target, "Target checkpoint folder that re-scores every token (or --rescore-endpoint)");
  c->add_option("--alpha", o->alpha, "Family-wise false-alarm rate of the verdict")->capture_default_str();
  c->add_option("--pit-seed", o->pit_seed,
                "Seed of the PIT's own uniforms and of the permutations (by default derived from the answers' "
                "questions and tokens, in any order: the same answers, the same verdict)")
      ->check(seed_check());
  add_support_margin_flags(*c, o->margin);
  c->add_option("--support-mass-margin", o->support_mass_margin,
                "Mass by which the mass ahead of a token may exceed top-p and count as on the support's boundary "
                "(replaces --engine-dtype's)");
  c->add_option("--permutations", o->permutations,
                "Permutations of the two-sample test: enough that 1 / (N + 1) reaches alpha over the hypotheses")
      ->capture_default_str();
  add_sampling_flags(*c, o->warpers, SamplingUse::kWarpers);
  c->add_option("--turns", o->turns, "Test all turns of choices[0], or only the first (all, as score: every turn the answers hold)")->capture_default_str();
  add_model_flags(*c, o->loading, "dtype of the re-scoring model (float64 by default, unlike score's: the "
                                   "distribution tested against carries no rounding of its own)");
  add_rescore_endpoint_flags(*c, o->engine,
                             "a token is tested where the top k covers the target's shaped support up to it (top-k <= k, "
                             "or the top-p or min-p cut inside the k; temperature 1 alone: the token and those ahead of it "
                             "among the k), and counted as beyond_top_k otherwise");
  c->add_option("--json", o->json, "Write the JSON report here (reports/schema/sampling_report.schema.json)");
  c->add_option("--junit", o->junit, "Write a JUnit XML report here");
  c->add_option("--markdown", o->markdown, "Write a Markdown summary here");
  c->add_option("--html", o->html, "Write a self-contained HTML report with the PIT histogram here");
  c->callback([o, c] { run_sampling(*o, *c); });
}

}  // namespace specgate::cli
