#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/bench/bench_report.h"
#include "conformance/bench/bench_runner.h"
#include "conformance/bench/bench_workload.h"
#include "conformance/bench/machine_info.h"
#include "conformance/commands/commands.h"
#include "conformance/commands/decoder_flags.h"
#include "conformance/commands/model_flags.h"
#include "conformance/commands/seed_check.h"
#include "conformance/commands/tree_flags.h"
#include "conformance/engines/model_pair.h"
#include "conformance/files/output_file.h"
#include "conformance/terminal/progress_bar.h"
#include "impl/bench/conversation.h"
#include "impl/bench/question.h"
#include "impl/common/error.h"
#include "impl/common/utc_now.h"

namespace specgate::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> engines = {"nonspec-batch", "eqspec", "naive-realign", "exspec", "exspec-aging"};
  std::vector<int64_t> batch_sizes = {1, 2, 4, 8, 16};
  int64_t draft_tokens = 4;
  DraftingFlags drafting;
  std::filesystem::path target, draft, bench, json, svg, markdown;
  TreeFlags tree;
  int64_t max_new_tokens = 64;
  std::string acceptance = "model";
  ModelFlags loading{.dtype = "float32"};
  int64_t repeat = 3;
  int64_t limit = 0;
  int64_t sample = 0;
  int64_t sequences = 0;
  bool sort_by_length = false;
  int64_t window_batches = 2;
  int64_t max_wait = 1;
  uint64_t seed = 0;
  std::string chat_template = "raw";
};

std::vector<Question> bench_questions(const BenchOptions& options) {
  std::vector<Question> questions = read_questions(options.bench);
  if (options.limit > 0 && static_cast<int64_t>(questions.size()) > options.limit) questions.resize(options.limit);
  if (options.sample > 0 && static_cast<int64_t>(questions.size()) > options.sample) {
    // Question i * n / sample for i < sample: evenly spaced, so every category of the file is in.
    std::vector<Question> spread;
    const size_t n = questions.size();
    for (int64_t i = 0; i < options.sample; ++i) spread.push_back(std::move(questions[i * n / options.sample]));
    questions = std::move(spread);
  }
  if (questions.empty()) throw InputError(options.bench.string() + ": no questions");
  return questions;
}

// The first turns' prompts as generate builds them: a bench line's prompt_token_ids verbatim,
// else the question rendered with the chat template.
std::vector<std::vector<int64_t>> first_turn_prompts(const BenchOptions& options, const std::vector<Question>& questions,
                                                     const PromptFormat& format, const Transformer& target) {
  std::vector<std::vector<int64_t>> prompts;
  for (const Question& question : questions) {
    prompts.push_back(turn_prompt(format, question, 0, {}));
    check_encoded_ids(prompts.back(), target,
                      options.bench.string() + ": question " + std::to_string(question.question_id) + ": the first turn");
  }
  return prompts;
}

// The trees of --tree or --tree-topk, with the engine tree that measures them added to `engines`
// where they lack it; InputError where tree is named without them, or their trees would follow
// a scripted acceptance, which scripts chains of --draft-tokens.
std::optional<TreePolicy> tree_engine(const BenchOptions& options, const CLI::App& command, const Drafting& drafting,
                                      const AcceptanceMode& acceptance, std::vector<Engine>& engines) {
  const bool named = std::find(engines.begin(), engines.end(), Engine::kTree) != engines.end();
  std::optional<TreePolicy> tree = tree_policy(options.tree, command, drafting, options.draft);
  if (!tree) {
    if (named) throw InputError("--engines: engine tree needs --tree FILE or --tree-topk K, the trees it drafts");
    return std::nullopt;
  }
  if (acceptance.scripted_alpha)
    throw InputError("--tree: trees are measured with --acceptance model; a scripted acceptance scripts chains");
  if (!named) engines.push_back(Engine::kTree);
  return tree;
}

// The settings' record of the trees measured.
nlohmann::ordered_json tree_settings(const BenchOptions& options, const std::optional<TreePolicy>& tree) {
  if (!tree) return nullptr;
  if (const TreeShape* shape = std::get_if<TreeShape>(&*tree))
    return {{"file", options.tree.file.string()}, {"nodes", shape->size()}, {"depth", shape->max_depth()}};
  const TopkTree& t = std::get<TopkTree>(*tree);
  return {{"topk", t.topk}, {"depth", t.depth}, {"nodes", t.nodes}};
}

// Every (engine, batch size) asked, nonspec-batch first at each batch size, and nonspec-batch
// at batch size 1 whether asked or not: the speedups are against them.
std::vector<BenchCase> plan(const std::vector<Engine>& engines, std::vector<int64_t> batch_sizes) {
  std::sort(batch_sizes.begin(), batch_sizes.end());
  batch_sizes.erase(std::unique(batch_sizes.begin(), batch_sizes.end()), batch_sizes.end());
  std::vector<BenchCase> cases;
  if (batch_sizes.front() != 1) cases.push_back({.engine = Engine::kNonspecBatch, .batch_size = 1});
  for (int64_t batch : batch_sizes) {
    cases.push_back({.engine = Engine::kNonspecBatch, .batch_size = batch});
    for (Engine engine : engines) {
      if (engine != Engine::kNonspecBatch) cases.push_back({.engine = engine, .batch_size = batch});
    }
  }
  return cases;
}

// The table, each column as wide as its widest cell: text left-aligned, figures right-aligned.
void print_table(const std::vector<Measurement>& measurements) {
  const std::vector<std::string> header = table_header();
  const std::vector<std::vector<std::string>> rows = table_rows(measurements);
  std::vector<size_t> widths(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    widths[c] = header[c].size();
    for (const std::vector<std::string>& row : rows) widths[c] = std::max(widths[c], row[c].size());
  }
  const auto print = [&widths](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c)
      std::printf(c == 0 ? "%-*s" : " %*s", static_cast<int>(widths[c]), cells[c].c_str());
    std::printf("\n");
  };
  print(header);
  for (const std::vector<std::string>& row : rows) print(row);
}

void run_bench(const BenchOptions& options, const CLI::App& command) {
  std::vector<Engine> engines;
  for (const std::string& name : options.engines) engines.push_back(engine_from_name(name, kBenchEngines, "--engines"));
  const Drafting drafting = options.drafting.drafting();
  const AcceptanceMode acceptance = acceptance_from_name(options.acceptance);
  const std::optional<TreePolicy> tree = tree_engine(options, command, drafting, acceptance, engines);
  const bool with_draft_model = std::any_of(engines.begin(), engines.end(),
                                            [&](Engine engine) { return needs_draft_model(engine, drafting); });
  if (with_draft_model && options.draft.empty())
    throw InputError("--draft: the speculative engines need a draft checkpoint, or --drafter ngram");
  if (acceptance.scripted_alpha && drafting.ngram)
    throw InputError("--acceptance: a scripted acceptance drives a draft model; --drafter ngram drafts from the context");
  const ChatTemplate chat_template = chat_template_from_name(options.chat_template, "--chat-template");
  const at::ScalarType dtype = options.loading.scalar_type();
  const c10::Device device = options.loading.torch_device();

  // Opened first: a path that cannot be written is refused before the minutes of measuring.
  const std::vector<NamedInput> inputs = {{"--target", options.target}, {"--draft", options.draft}, {"--bench", options.bench}};
  OutputFile json("--json", options.json, inputs);
  std::optional<OutputFile> svg, markdown;
  if (!options.svg.empty()) svg.emplace("--svg", options.svg, inputs);
  if (!options.markdown.empty()) markdown.emplace("--markdown", options.markdown, inputs);

  const std::vector<Question> questions = bench_questions(options);
  const int64_t prompt_ids_given = questions_with_prompt_ids(questions);
  const bool every_prompt_given = prompt_ids_given == static_cast<int64_t>(questions.size());
  const ModelPair models =
      load_model_pair(options.target, with_draft_model ? options.draft : "", dtype, device, !every_prompt_given);
  const PromptFormat format{models.tokenizer.get(), chat_template};
  if (format.tokenizer != nullptr) check_template_tokens(format, "--chat-template");
  const std::vector<std::vector<int64_t>> prompts = first_turn_prompts(options, questions, format, models.target);
  BenchSetup setup{.target = &models.target, .drafting = drafting, .draft = models.draft_or_null(),
                   .tree = tree ? &*tree : nullptr, .window_per_batch = options.window_batches,
                   .max_wait = options.max_wait};
  setup.requests = cycle_prompts(prompts, options.sequences > 0 ? options.sequences : static_cast<int64_t>(prompts.size()));
  if (options.sort_by_length) {
    std::stable_sort(setup.requests.begin(), setup.requests.end(),
                     [](const SequenceRequest& a, const SequenceRequest& b) { return a.prompt.size() < b.prompt.size(); });
  }
  setup.decode.draft_tokens = options.draft_tokens;
  setup.decode.max_new_tokens = options.max_new_tokens;
  setup.decode.eos_ids = models.target.config().eos_token_ids;
  for (const SequenceRequest& request : setup.requests) {
    const int64_t needed = static_cast<int64_t>(request.prompt.size()) + options.max_new_tokens;
    if (needed > models.target.config().max_position_embeddings)
      throw InputError(options.bench.string() + ": a prompt and --max-new-tokens need " + std::to_string(needed) +
                       " positions, the target has " + std::to_string(models.target.config().max_position_embeddings));
  }
  const int64_t largest_batch = *std::max_element(options.batch_sizes.begin(), options.batch_sizes.end());
  if (acceptance.scripted_alpha) {
    setup.script = ScriptedDrafts{
        greedy_continuations(models.target, setup.requests, setup.decode,
                             options.max_new_tokens + options.draft_tokens + 1, largest_batch),
        bernoulli_script(*acceptance.scripted_alpha, options.draft_tokens, options.seed),
        models.target.config().vocab_size};
  }

  const std::vector<BenchCase> cases = plan(engines, options.batch_sizes);
  std::vector<Measurement> measurements;
  nlohmann::ordered_json run_order = nlohmann::ordered_json::array();
  {
    ProgressBar progress("bench", static_cast<int64_t>(cases.size()) * options.repeat);
    measurements = measure(setup, cases, options.repeat, [&](const ScheduledRun& run) {
      const BenchCase& c = cases[run.case_index];
      progress.update(static_cast<int64_t>(run_order.size()), engine_name(c.engine) + " B=" + std::to_string(c.batch_size) +
                                                                  " run " + std::to_string(run.repeat + 1));
      run_order.push_back({{"engine", engine_name(c.engine)}, {"batch_size", c.batch_size}, {"repeat", run.repeat}});
    });
  }
  print_table(measurements);

  nlohmann::ordered_json report;
  report["schema_version"] = 1;
  report["generated_at"] = utc_now();
  report["machine"] = machine_info(device);
  report["settings"] = {{"target", options.target.string()},
                        {"draft", options.draft.string()},
                        {"bench", options.bench.string()},
                        {"questions_with_prompt_token_ids", prompt_ids_given},
                        {"chat_template", options.chat_template},
                        {"question_limit", options.limit},
                        {"question_sample", options.sample},
                        {"sequences", setup.requests.size()},
                        {"sorted_by_prompt_length", options.sort_by_length},
                        {"draft_tokens", options.draft_tokens},
                        {"tree", tree_settings(options, tree)},
                        {"drafter", drafting.name()},
                        {"ngram", drafting.ngram ? nlohmann::ordered_json{{"min", drafting.lookup.min_n}, {"max", drafting.lookup.max_n}}
                                                 : nlohmann::ordered_json(nullptr)},
                        {"max_new_tokens", options.max_new_tokens},
                        {"acceptance", acceptance.name()},
                        {"dtype", options.loading.dtype},
                        {"device", device.str()},
                        {"repeat", options.repeat},
                        {"exspec_window_batches", options.window_batches},
                        {"exspec_aging_max_wait", options.max_wait},
                        {"seed", options.seed}};
  report["results"] = results_json(measurements);
  report["run_order"] = std::move(run_order);
  json.stream() << report.dump(2) << "\n";
  json.commit();
  std::printf("wrote %s", options.json.string().c_str());
  const std::string trees = tree ? ", trees of " + std::to_string(max_tree_nodes(*tree)) + " nodes" : "";
  const std::string title = "specgate bench, " + acceptance.name() + ", K=" + std::to_string(options.draft_tokens) + trees +
                            ", " + options.loading.dtype + " on " + device.str();
  if (svg) {
    svg->stream() << results_svg(measurements, title);
    svg->commit();
    std::printf(", %s", options.svg.string().c_str());
  }
  if (markdown) {
    markdown->stream() << results_markdown(
        measurements, title,
        {{"target", options.target.string()},
         {"drafter", drafting.ngram ? "ngram" : options.draft.string()},
         {"questions", std::to_string(questions.size())},
         {"sequences", std::to_string(setup.requests.size())},
         {"new tokens", std::to_string(options.max_new_tokens)},
         {"repeats", std::to_string(options.repeat) + ", interleaved"},
         {"machine", report["machine"].value("cpu", std::string("?")) + ", " + device.str() + ", libtorch " +
                         report["machine"].value("libtorch", std::string("?"))}});
    markdown->commit();
    std::printf(", %s", options.markdown.string().c_str());
  }
  std::printf("\n");
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* c = app.add_subcommand("bench", "Measure throughput, phase times and latency of every engine and batch size");
  c->add_option("--engines", o->engines,
                "nonspec-batch, eqspec, naive-realign, exspec, exspec-aging, rollback, tree (with --tree; "
                "nonspec-batch always runs)")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--batch-sizes", o->batch_sizes,
                "Batch sizes to measure (and nonspec-batch at batch size 1, the baseline of the speedups)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  add_draft_tokens_flag(*c, o->draft_tokens, "K, drafts per round")->capture_default_str();
  add_drafting_flags(*c, o->drafting);
  c->add_option("--target", o->target, "Target checkpoint folder")->required();
  c->add_option("--draft", o->draft, "Draft checkpoint folder");
  add_tree_flags(*c, o->tree);
  c->add_option("--bench", o->bench, "Spec-Bench question.jsonl (first turns are the prompts)")->required();
  c->add_option("--chat-template", o->chat_template,
                "Prompt format where the bench line has no prompt_token_ids, as generate's: raw, vicuna, chatml, "
                "smollm2, llama3 or llama2")
      ->capture_default_str();
  c->add_option("--max-new-tokens", o->max_new_tokens, "Tokens per sequence")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  c->add_option("--acceptance", o->acceptance, "model, or scripted:ALPHA (each draft token right with probability ALPHA)")
      ->capture_default_str();
  add_model_flags(*c, o->loading, "dtype of target and draft");
  c->add_option("--repeat", o->repeat, "Timed runs per measurement, interleaved round-robin across engines and batch sizes; the median is reported")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  c->add_option("--limit", o->limit, "Only the first N questions")->check(CLI::NonNegativeNumber);
  c->add_option("--sample", o->sample, "Only N questions evenly spaced through the file (after --limit)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--sequences", o->sequences, "Sequences per run, cycling through the prompts (default: one per question)")
      ->check(CLI::NonNegativeNumber);
  c->add_flag("--sort-by-length", o->sort_by_length,
             "Every engine takes the sequences shortest prompt first, so that a batch's prompts pad little");
  c->add_option("--window-batches", o->window_batches, "EXSPEC's window in batches")->capture_default_str()->check(CLI::Range(1, 64));
  c->add_option("--max-wait", o->max_wait, "exspec-aging: most steps a sequence may be left out (raised to the smallest feasible)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--seed", o->seed, "Seed of the scripted acceptance")->capture_default_str()->check(seed_check());
  c->add_option("--json", o->json, "Results JSON to write")->required();
  c->add_option("--svg", o->svg, "Charts of throughput, speedup over nonspec-batch and realign share against batch size");
  c->add_option("--markdown", o->markdown, "The table, with the settings, as Markdown");
  c->callback([o, c] { run_bench(*o, *c); });
}

}  // namespace specgate::cli
