#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/decoder_flags.h"
#include "conformance/commands/seed_check.h"
#include "conformance/commands/verdict.h"
#include "conformance/engines/engine_run.h"
#include "conformance/engines/model_pair.h"
#include "conformance/files/output_file.h"
#include "conformance/terminal/progress_bar.h"
#include "fixtures/bench/embedded_sample_bench.h"
#include "fixtures/models/default_fixtures.h"
#include "impl/bench/answer.h"
#include "impl/bench/question.h"
#include "impl/common/error.h"
#include "impl/reports/html_report.h"
#include "impl/reports/json_report.h"
#include "impl/reports/junit_report.h"
#include "impl/reports/markdown_report.h"
#include "impl/reports/report_text.h"
#include "impl/scoring/scorer.h"

namespace specgate::cli {
namespace {

struct DemoOptions {
  std::filesystem::path out = "reports/demo";
  std::filesystem::path fixtures;  // a pair built before; empty: build one into out/fixtures
  uint64_t seed = 0;
  int64_t max_new_tokens = 256;  // enough for decoding, not the prompt passes, to dominate
  DecoderFlags decoder;
  std::string fault = "kv-not-shifted";
};

// One line of the demo: an engine (possibly with a seeded fault, or verifying token trees) and
// whether it must match.
struct DemoEngine {
  Engine engine;
  std::string label;
  std::string fault;               // empty: the engine as built
  const TreePolicy* tree = nullptr;  // EAGLE-2's dynamic trees instead of chains
};

// The demo's trees, drafted by its draft model.
const TreePolicy kDemoTrees = TopkTree{.topk = 3, .depth = 4, .nodes = 8};

struct DemoRow {
  std::string label;
  bool expected_exact = true;
  EngineOutput output;
  ScoreReport report;
};

void write_score_reports(const ScoreReport& report, const std::filesystem::path& stem) {
  write_output_file("--out", stem.string() + ".json", [&](std::ostream& out) { out << score_report_json(report).dump(2) << "\n"; });
  write_output_file("--out", stem.string() + ".junit.xml", [&](std::ostream& out) { write_junit_report(report, out); });
  write_output_file("--out", stem.string() + ".md", [&](std::ostream& out) { write_markdown_report(report, out); });
  write_output_file("--out", stem.string() + ".html", [&](std::ostream& out) { write_html_report(report, out); });
}

double tokens_per_s(const EngineTally& tally) { return tally.tokens / std::max(tally.seconds, 1e-9); }

// The table, as text for the terminal or as Markdown for summary.md; the speedup is against
// nonspec-batch at the same batch size.
std::string results_table(const std::vector<DemoRow>& rows, bool markdown) {
  std::ostringstream table;
  const char* format =
      markdown ? "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" : "%-32s %8s %8s %9s %8s %12s %16s %12s  %s\n";
  char line[256];
  std::snprintf(line, sizeof line, format, "engine", "exact", "partial", "tokens/s", "speedup", "tokens/round",
                "accepted/drafted", "realignments", "verdict");
  table << line;
  if (markdown) table << "|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  const auto nonspec = std::find_if(rows.begin(), rows.end(), [](const DemoRow& row) {
    return row.label == engine_name(Engine::kNonspecBatch);
  });
  for (const DemoRow& row : rows) {
    const GroupSummary& all = row.report.overall;
    const bool exact = all.exact == all.questions && row.report.gate.passed;
    const EngineTally& tally = row.output.tally;
    const bool speculative = tally.stats.drafted > 0;
    char throughput[32], speedup[32], per_round[32], acceptance[32], realignments[32];
    std::snprintf(throughput, sizeof throughput, "%.1f", tokens_per_s(tally));
    if (nonspec == rows.end()) std::snprintf(speedup, sizeof speedup, "-");
    else std::snprintf(speedup, sizeof speedup, "%.2fx", tokens_per_s(tally) / tokens_per_s(nonspec->output.tally));
    std::snprintf(per_round, sizeof per_round, "%.2f", speculative ? tally.stats.tokens_per_round() : 1.0);
    std::snprintf(acceptance, sizeof acceptance, "%s", speculative ? percent(tally.stats.acceptance_rate()).c_str() : "-");
    const Coverage& coverage = row.report.candidate_coverage;
    std::snprintf(realignments, sizeof realignments, "%s",
                  coverage.known() ? std::to_string(coverage.realignments).c_str() : "-");
    const bool covered = !coverage_warning(coverage);
    const char* verdict = exact == row.expected_exact
                              ? (exact ? (covered ? "equivalent" : "equivalent, too few realignments to tell")
                                       : "caught, as expected")
                              : (exact ? "NOT CAUGHT" : "NOT EQUIVALENT");
    std::snprintf(line, sizeof line, format, row.label.c_str(), optional_percent(all.exact_match).c_str(),
                  optional_percent(all.partial_match).c_str(), throughput, speedup, per_round, acceptance, realignments,
                  verdict);
    table << line;
  }
  return table.str();
}

// What a user came for, in one line: whether each speculative decoder is exact and how much
// faster it decodes than nonspec-batch at the same batch size, and whether the fault was caught.
std::string headline(const std::vector<DemoRow>& rows, int64_t batch_size) {
  const auto nonspec = std::find_if(rows.begin(), rows.end(), [](const DemoRow& row) {
    return row.label == engine_name(Engine::kNonspecBatch);
  });
  std::string text;
  char part[256];
  for (const DemoRow& row : rows) {
    const GroupSummary& all = row.report.overall;
    const EngineTally& tally = row.output.tally;
    if (tally.stats.drafted == 0 || nonspec == rows.end()) continue;
    if (row.expected_exact) {
      std::snprintf(part, sizeof part, "%s %s exact, %.2fx nonspec-batch's tokens/s at batch %lld (%.2f tokens a round)",
                    row.label.c_str(), optional_percent(all.exact_match).c_str(), tokens_per_s(tally) / tokens_per_s(nonspec->output.tally),
                    static_cast<long long>(batch_size), tally.stats.tokens_per_round());
    } else {
      std::snprintf(part, sizeof part, "%s %s (%s exact)", row.label.c_str(),
                    all.exact == all.questions ? "NOT CAUGHT" : "caught", optional_percent(all.exact_match).c_str());
    }
    text += (text.empty() ? "" : "; ") + std::string(part);
  }
  return text;
}

void run_demo(const DemoOptions& options) {
  const int64_t window = options.decoder.exspec_window();
  const Drafting drafting = options.decoder.drafting.drafting();
  const std::filesystem::path fixtures = options.fixtures.empty() ? options.out / "fixtures" : options.fixtures;
  DraftAgreement agreement;
  if (options.fixtures.empty()) {
    std::printf("building the fixture pair in %s ...\n", fixtures.string().c_str());
    std::fflush(stdout);
    agreement = build_default_fixtures(fixtures, options.seed);
  } else {
    agreement = built_fixture_agreement(fixtures, options.seed);
    std::printf("the fixture pair of seed %llu from %s\n", static_cast<unsigned long long>(options.seed),
                fixtures.string().c_str());
  }
  std::printf("draft agrees with the target's greedy choice at %.1f%% of %lld positions\n", 100 * agreement.rate(),
              static_cast<long long>(agreement.positions));

  const ModelPair models = load_model_pair(fixtures / "target", fixtures / "draft", at::kFloat, at::kCPU);
  for (const char* folder : {"answers", "reports"}) std::filesystem::create_directories(options.out / folder);
  const std::filesystem::path bench_path = options.out / "question.jsonl";
  write_output_file("--out", bench_path, [](std::ostream& out) { out << embedded_sample_bench(); });
  const std::vector<Question> questions = read_questions(bench_path);

  DecodeOptions decode;
  decode.draft_tokens = options.decoder.draft_tokens;
  decode.max_new_tokens = options.max_new_tokens;
  decode.eos_ids = models.target.config().eos_token_ids;
  std::vector<DemoEngine> engines = {{Engine::kOracle, "oracle", ""},
                                     {Engine::kNonspecBatch, "nonspec-batch", ""},
                                     {Engine::kEqspec, "eqspec", ""},
                                     {Engine::kExspec, "exspec", ""}};
  if (!drafting.ngram) engines.push_back({Engine::kEqspec, "eqspec + trees", "", &kDemoTrees});
  engines.push_back({Engine::kEqspec, "eqspec + fault " + options.fault, options.fault});
  std::printf("generating %lld tokens for each of %zu questions with %zu engines (batch %lld, K %lld, %s drafts, float32, cpu)\n",
              static_cast<long long>(options.max_new_tokens), questions.size(), engines.size(),
              static_cast<long long>(options.decoder.batch_size), static_cast<long long>(options.decoder.draft_tokens),
              drafting.name().c_str());
  std::fflush(stdout);

  std::vector<DemoRow> rows;
  const std::filesystem::path reference = options.out / "answers" / "oracle.jsonl";
  {
    ProgressBar progress("demo", static_cast<int64_t>(engines.size()));
    for (const DemoEngine& demo : engines) {
      progress.update(static_cast<int64_t>(rows.size()), demo.label);
      EngineRun run{.tokenizer = models.tokenizer.get(), .model_id = "specgate-fixture-target"};
      run.spec = {.engine = demo.engine, .target = &models.target, .drafting = drafting,
                  .draft = needs_draft_model(demo.engine, drafting) ? models.draft_or_null() : nullptr,
                  .decoder = {.decode = decode, .batch_size = options.decoder.batch_size, .exspec = {.window = window}},
                  .top_logprobs = demo.engine == Engine::kOracle ? 5 : 0,
                  .tree = demo.tree};
      if (!demo.fault.empty()) run.spec.decoder.decode.faults.add(fault_from_name(demo.fault));
      DemoRow row{.label = demo.label, .expected_exact = demo.fault.empty(), .output = run_engine(run, questions)};
      const std::string stem = !demo.fault.empty() ? engine_name(demo.engine) + "-" + demo.fault
                               : demo.tree != nullptr ? engine_name(demo.engine) + "-trees"
                                                      : demo.label;
      const std::filesystem::path answers = options.out / "answers" / (stem + ".jsonl");
      write_output_file("--out", answers, [&](std::ostream& out) {
        for (const Answer& answer : row.output.answers) write_answer_line(out, answer);
      });
      row.report = score_answers({.reference = reference, .candidate = answers, .bench = bench_path});
      write_score_reports(row.report, options.out / "reports" / stem);
      rows.push_back(std::move(row));
    }
  }

  const std::string table = results_table(rows, /*markdown=*/false);
  const std::string summary = headline(rows, options.decoder.batch_size);
  std::printf("\n%s\n\n%s\n", summary.c_str(), table.c_str());
  write_output_file("--out", options.out / "summary.md", [&](std::ostream& out) {
    out << "# specgate demo\n\nEvery engine scored against the oracle on the embedded sample bench (" << questions.size()
        << " questions, " << options.max_new_tokens << " new tokens, fixture pair, float32 on CPU).\n\n**" << summary
        << "**\n\n"
        << results_table(rows, /*markdown=*/true);
  });
  std::printf("reports (JSON, JUnit, Markdown, HTML) in %s, answers in %s, summary in %s\n",
              (options.out / "reports").string().c_str(), (options.out / "answers").string().c_str(),
              (options.out / "summary.md").string().c_str());
  for (const DemoRow& row : rows) {
    const bool exact = row.report.overall.exact == row.report.overall.questions && row.report.gate.passed;
    if (exact != row.expected_exact) throw Verdict();
  }
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto options = std::make_shared<DemoOptions>();
  CLI::App* command = app.add_subcommand(
      "demo",
      "The main job on the embedded default: fixture pair, every engine and one seeded fault on the sample bench, "
      "each scored against the oracle; exit 1 unless every engine is exact and the fault is caught");
  command->add_option("--out", options->out, "Folder for the fixtures, answers and reports")->capture_default_str();
  command->add_option("--fixtures", options->fixtures,
                      "A fixture pair built before (`conformance fixtures --out DIR`; the build trains one into "
                      "build/fixture_pair) instead of training one into OUT/fixtures");
  command->add_option("--seed", options->seed, "Fixture seed")->capture_default_str()->check(seed_check());
  command->add_option("--max-new-tokens", options->max_new_tokens, "Tokens generated per question")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  add_decoder_flags(*command, options->decoder);
  command->add_option("--fault", options->fault, "The fault seeded into EQSPEC to show that it is caught")->capture_default_str();
  command->callback([options] {
    const FaultSet fault = FaultSet().add(fault_from_name(options->fault));
    require_committable(fault, "eqspec", /*exspec_engine=*/false, /*greedy=*/true);
    run_demo(*options);
  });
}

}  // namespace specgate::cli
