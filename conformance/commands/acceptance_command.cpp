#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/decoder_flags.h"
#include "conformance/commands/model_flags.h"
#include "conformance/commands/rescore_flags.h"
#include "conformance/commands/verdict.h"
#include "conformance/commands/sampling_flags.h"
#include "conformance/files/output_file.h"
#include "conformance/terminal/progress_bar.h"
#include "impl/bench/chat_template.h"
#include "impl/common/dtype.h"
#include "impl/common/error.h"
#include "impl/reports/acceptance_report.h"
#include "impl/scoring/acceptance_check.h"
#include "impl/scoring/rescorer.h"
#include "impl/scoring/support_margin.h"

namespace specgate::cli {
namespace {

struct AcceptanceOptions {
  std::vector<std::filesystem::path> answers;
  std::filesystem::path target, draft, server_counters;
  std::filesystem::path json, junit, markdown, html;
  double alpha = 0.05;
  int64_t draft_tokens = 0;
  std::string draft_sampling = "sampled";
  DraftingFlags drafting;
  double near_tie_threshold = 0.1;
  SupportMarginFlags margin;
  SamplingParams warpers;
  ModelFlags loading{.dtype = "float64"};
  RescoreEndpointFlags engine;
  std::string draft_endpoint;
};

void run_acceptance(const AcceptanceOptions& o, const CLI::App& command) {
  const at::ScalarType dtype = o.loading.scalar_type();
  const c10::Device device = o.loading.torch_device();
  // The prompts are the answers' own prompt_token_ids; the template goes unused.
  const Drafting drafting = o.drafting.drafting();
  if (drafting.ngram && !o.draft.empty()) throw InputError("--draft: --drafter ngram uses no draft model");
  const bool draft_given = !o.draft.empty() || !o.draft_endpoint.empty();
  if (!drafting.ngram && !draft_given)
    throw InputError("--draft: needed, the engine's draft checkpoint (or --draft-endpoint), or --drafter ngram");
  if (drafting.ngram && !o.draft_endpoint.empty()) throw InputError("--draft-endpoint: --drafter ngram uses no draft model");
  if (!o.draft.empty() && !o.draft_endpoint.empty()) throw InputError("--draft or --draft-endpoint: give one of them");
  if (o.target.empty() != o.engine.given()) throw InputError("--target or --rescore-endpoint: give one of them");
  if (!o.draft_endpoint.empty() && !o.engine.given())
    throw InputError("--draft-endpoint: only with --rescore-endpoint, whose settings it shares");
  // An answer's last round that ends at EOS holds no trial for its final token, and a sampled
  // round's odds are conditioned on going on past EOS: both need the ids a checkpoint would give.
  if (o.engine.given() && o.engine.eos_ids.empty())
    throw InputError("--rescore-eos-id: acceptance through --rescore-endpoint needs the model's EOS ids "
                     "(generation_config.json's eos_token_id; the flag once per id)");
  if (drafting.ngram && command.count("--draft-sampling") > 0)
    throw InputError("--draft-sampling: --drafter ngram proposes looked-up tokens, not a draft model's");
  EngineRescorer target_engine, draft_engine;
  std::unique_ptr<Rescorer> target_checkpoint, draft_checkpoint;
  if (o.engine.given()) {
    target_engine = engine_rescorer(o.engine, o.engine.endpoint, "--rescore-endpoint");
  } else {
    target_checkpoint = std::make_unique<Rescorer>(o.target, dtype, device, ChatTemplate::kRaw);
  }
  if (!o.draft_endpoint.empty()) {
    RescoreEndpointFlags draft_flags = o.engine;
    draft_flags.model.clear();
    draft_engine = engine_rescorer(draft_flags, o.draft_endpoint, "--draft-endpoint");
  } else if (!o.draft.empty()) {
    draft_checkpoint = std::make_unique<Rescorer>(o.draft, dtype, device, ChatTemplate::kRaw);
  }
  const Rescorer& target = target_engine.rescorer ? *target_engine.rescorer : *target_checkpoint;
  const Rescorer* draft = draft_engine.rescorer ? draft_engine.rescorer.get() : draft_checkpoint.get();
  // Rounding moves what a correct engine of another dtype than the re-scorer's accepts: the
  // checkpoints in that dtype say how far.
  std::optional<std::string> engine_dtype = given_engine_dtype(o.margin, command);
  if (!engine_dtype) {
    const std::optional<SupportMargin> recorded = answers_margin(o.answers, TurnScope::kAll, /*required=*/false);
    if (recorded) engine_dtype = recorded->engine_dtype;
  }
  std::unique_ptr<Rescorer> target_rounded, draft_rounded;
  if (target_checkpoint && (draft_checkpoint || drafting.ngram) && engine_dtype &&
      dtype_from_name(*engine_dtype, "--engine-dtype") != dtype) {
    const at::ScalarType rounded = dtype_from_name(*engine_dtype, "--engine-dtype");
    target_rounded = std::make_unique<Rescorer>(o.target, rounded, device, ChatTemplate::kRaw);
    if (draft_checkpoint) draft_rounded = std::make_unique<Rescorer>(o.draft, rounded, device, ChatTemplate::kRaw);
  }
  std::optional<SpeculationCounters> server_counters;
  if (!o.server_counters.empty()) {
    server_counters = read_speculation_counters_file(o.server_counters);
    if (server_counters->accepted_per_position.empty())
      throw InputError(o.server_counters.string() + ": field 'accepted_per_position': missing or empty; the server counted "
                       "no drafts by draft position (vLLM's vllm:spec_decode_num_accepted_tokens_per_pos)");
  }
  std::optional<ProgressBar> progress;
  const AcceptanceCheckReport report = check_acceptance(
      {.answers = o.answers,
       .target = &target,
       .draft = draft,
       .ngram = drafting.ngram ? std::optional(drafting.lookup) : std::nullopt,
       .greedy_drafts = o.draft_sampling == "greedy",
       .sampling = given_warpers(o.warpers, command),
       .draft_tokens = command.count("--draft-tokens") > 0 ? std::optional<int64_t>(o.draft_tokens) : std::nullopt,
       .alpha = o.alpha,
       .near_tie_threshold = o.near_tie_threshold,
       .near_tie_by_dtype = command.count("--near-tie-threshold") == 0,
       .rescorer_dtype = o.engine.given() ? o.engine.dtype : dtype_name(dtype),
       .engine_dtype = given_engine_dtype(o.margin, command),
       .support_margin = given_support_margin(o.margin, command),
       .target_in_engine_dtype = target_rounded.get(),
       .draft_in_engine_dtype = draft_rounded.get(),
       .server_counters = server_counters,
       .progress = progress_in(progress, "acceptance")});
  progress.reset();
  std::vector<NamedInput> inputs = {{"--target", o.target}, {"--draft", o.draft}, {"--server-counters", o.server_counters}};
  for (const auto& path : o.answers) inputs.emplace_back("--answers", path);
  if (target_engine.rescorer) print_rescore_cost(target_engine, "target re-scored through " + o.engine.endpoint);
  if (draft_engine.rescorer) print_rescore_cost(draft_engine, "draft re-scored through " + o.draft_endpoint);
  write_acceptance_summary(report, std::cout);
  write_reports({{"--json", o.json, [&](std::ostream& out) { out << acceptance_report_json(report).dump(2) << "\n"; }},
                 {"--junit", o.junit, [&](std::ostream& out) { write_acceptance_junit(report, out); }},
                 {"--markdown", o.markdown, [&](std::ostream& out) { write_acceptance_markdown(report, out); }},
                 {"--html", o.html, [&](std::ostream& out) { write_acceptance_html(report, out); }}},
                inputs);
  if (report.rejected) throw Verdict();
}

}  // namespace

void add_acceptance_command(CLI::App& app) {
  auto o = std::make_shared<AcceptanceOptions>();
  CLI::App* c = app.add_subcommand(
      "acceptance",
      "Compare a speculative engine's accepted drafts with what its target and drafter imply: every greedy round exactly, "
      "sampled rounds against sum min(p, q) (p of the proposed token for --drafter ngram); exit 0 when they agree, 1 when "
      "not, 2 on bad input");
  c->add_option("--answers", o->answers,
                "The engine's answers with token_ids, prompt_token_ids and per-turn accept_lengths (repeatable)")
      ->required();
  c->add_option("--target", o->target, "Target checkpoint folder (or --rescore-endpoint)");
  c->add_option("--draft", o->draft, "Draft checkpoint folder, the engine's drafter (--drafter model)");
  add_drafting_flags(*c, o->drafting);
  c->add_option("--draft-sampling", o->draft_sampling,
                "How the draft model proposes: sampled from its shaped distribution (specgate's engines), or greedy, its "
                "most likely token (vLLM's default draft_sample_method), accepted with the target's probability of it")
      ->check(CLI::IsMember({"sampled", "greedy"}))
      ->capture_default_str();
  c->add_option("--server-counters", o->server_counters,
                "The server's speculation counters over the run that wrote the answers (collect --counters): each draft "
                "position's accepted count is held to what the answers show; answers without rounds then have them "
                "implied by their tokens (--drafter ngram, --draft-sampling greedy, or greedy decoding)");
  add_draft_tokens_flag(*c, o->draft_tokens, "K, drafts per round; replaces every answer's run.draft_tokens");
  add_sampling_flags(*c, o->warpers, SamplingUse::kWarpers);
  c->add_option("--alpha", o->alpha, "False-alarm rate of the sampled verdict")->capture_default_str();
  c->add_option("--near-tie-threshold", o->near_tie_threshold,
                "Greedy: nats within which the draft's choice may go either way, as score's near-ties: by default widened "
                "per answer to what the rounding of its run.dtype and the re-scorer's dtype can flip, fixed when given")
      ->capture_default_str();
  add_support_margin_flags(*c, o->margin);
  add_model_flags(*c, o->loading, "dtype of both models (float64 by default, as sampling's: the probabilities "
                                   "tested against carry no rounding of their own)");
  add_rescore_endpoint_flags(*c, o->engine,
                             "greedy rounds need the top 2 (the draft's choice and its runner-up), sampled rounds both "
                             "shaped supports inside the top k at every position, else the answer is refused");
  c->add_option("--draft-endpoint", o->draft_endpoint,
                "The draft model served alone, http://HOST:PORT[/PREFIX], in place of --draft; asked as --rescore-endpoint");
  c->add_option("--json", o->json, "Write the JSON report here");
  c->add_option("--junit", o->junit, "Write a JUnit XML report here");
  c->add_option("--markdown", o->markdown, "Write a Markdown summary here");
  c->add_option("--html", o->html, "Write a self-contained HTML report here");
  c->callback([o, c] { run_acceptance(*o, *c); });
}

}  // namespace specgate::cli
