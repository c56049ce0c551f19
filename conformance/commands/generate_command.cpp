#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/decoder_flags.h"
#include "conformance/commands/interrupted.h"
#include "conformance/commands/model_flags.h"
#include "conformance/commands/sampling_flags.h"
#include "conformance/commands/tree_flags.h"
#include "conformance/commands/verdict.h"
#include "conformance/engines/engine_run.h"
#include "conformance/engines/model_pair.h"
#include "conformance/files/answer_file.h"
#include "conformance/terminal/progress_bar.h"
#include "conformance/terminal/stop_signals.h"
#include "impl/bench/conversation.h"
#include "impl/common/counted.h"
#include "impl/common/error.h"
#include "impl/reports/report_text.h"

namespace specgate::cli {
namespace {

struct GenerateOptions {
  std::string engine;
  std::filesystem::path target, draft, bench, out;
  DecoderFlags decoder;
  int64_t max_wait = 0;
  bool sort_by_length = false;
  std::string turns = "first";
  int64_t max_new_tokens = 128;
  SamplingParams sampling;
  ModelFlags loading{.dtype = "float32"};
  int64_t limit = 0;
  std::vector<int64_t> question_ids;
  bool check_invariants = false;
  std::vector<std::string> faults;
  int64_t top_logprobs = 5;
  bool skip_long_prompts = false;
  bool resume = false;
  std::string chat_template = "raw";
  TreeFlags tree;
};

// Positions a question's last generated turn needs: its prompt (the conversation before it,
// with empty answers where the bench gives no ids) and every turn's answer up to it.
// The prompt's ids must be tokens of the target too.
int64_t positions_needed(const Question& question, const PromptFormat& format, const Transformer& target,
                         const GenerateOptions& options) {
  const size_t last = options.turns == "all" ? question.turns.size() - 1 : 0;
  const std::vector<std::vector<int64_t>> no_answers(last);
  const std::vector<int64_t> ids = turn_prompt(format, question, last, no_answers);
  check_encoded_ids(ids, target, options.bench.string() + ": question " + std::to_string(question.question_id));
  const int64_t prompt = static_cast<int64_t>(ids.size());
  const int64_t answers = question.prompt_token_ids.empty() ? static_cast<int64_t>(last + 1) : 1;
  return prompt + answers * options.max_new_tokens;
}

// A bench's prompt ids must be tokens of the target.
void check_prompt_ids(const Question& question, const ModelConfig& config, const GenerateOptions& options) {
  for (size_t t = 0; t < question.prompt_token_ids.size(); ++t) {
    for (size_t i = 0; i < question.prompt_token_ids[t].size(); ++i) {
      const int64_t id = question.prompt_token_ids[t][i];
      if (id >= config.vocab_size)
        throw InputError(options.bench.string() + ": question " + std::to_string(question.question_id) +
                         ": field 'prompt_token_ids[" + std::to_string(t) + "][" + std::to_string(i) + "]': token " +
                         std::to_string(id) + " is outside the target's vocabulary (" +
                         std::to_string(config.vocab_size) + " tokens)");
    }
  }
}

// Prompts that, with max_new_tokens, do not fit the target's context are an error unless
// the user asked to skip them.
std::vector<Question> drop_or_refuse_long_prompts(std::vector<Question> questions, const PromptFormat& format,
                                                  const Transformer& target, const GenerateOptions& options) {
  const ModelConfig& config = target.config();
  std::vector<Question> kept;
  for (Question& q : questions) {
    check_prompt_ids(q, config, options);
    const int64_t needed = positions_needed(q, format, target, options);
    if (needed <= config.max_position_embeddings) {
      kept.push_back(std::move(q));
      continue;
    }
    const std::string message = "question " + std::to_string(q.question_id) + ": prompt and --max-new-tokens need " +
                                std::to_string(needed) + " positions, the target has " +
                                std::to_string(config.max_position_embeddings);
    if (!options.skip_long_prompts) throw InputError(message + " (--skip-long-prompts skips such questions)");
    std::cerr << "conformance: skipping " << message << "\n";
  }
  return kept;
}

// A checkpoint's name in the answers: its folder's, "T" for T/ too.
std::string folder_name(const std::filesystem::path& folder) {
  return (folder.has_filename() ? folder.filename() : folder.parent_path().filename()).string();
}

constexpr Engine kEngines[] = {Engine::kOracle, Engine::kNonspecBatch, Engine::kEqspec, Engine::kExspec, Engine::kRollback};

// The verdict on a violated invariant, as one line.
std::string verdict_line(const LocatedViolation& violation, bool all_turns, size_t kept, const std::filesystem::path& out) {
  std::ostringstream line;
  line << "invariant violated in question" << (violation.questions.size() > 1 ? "s " : " ");
  for (size_t i = 0; i < violation.questions.size(); ++i) line << (i ? ", " : "") << violation.questions[i];
  if (all_turns) line << ", turn " << violation.turn + 1;
  line << ", round " << violation.round << (violation.round == 0 ? " (the prompt pass)" : "") << ": " << violation.what()
       << "; ";
  if (kept == 0) {
    line << "no answer had finished, " << out.string() << " is empty";
  } else {
    line << "the " << kept << (kept == 1 ? " answer" : " answers") << " finished before it are in " << out.string();
  }
  return line.str();
}

void run_generate(const GenerateOptions& options, const CLI::App& command) {
  const Engine engine = engine_from_name(options.engine, kEngines, "--engine");
  const ChatTemplate chat_template = chat_template_from_name(options.chat_template, "--chat-template");
  const Drafting drafting = options.decoder.drafting.drafting();
  check_draft_flag(engine, drafting, !options.draft.empty());
  if (engine == Engine::kOracle && !options.faults.empty())
    throw InputError("--inject-fault: the oracle is the reference and takes no faults");
  if (engine != Engine::kOracle && command.count("--top-logprobs") > 0)
    throw InputError("--top-logprobs: only the oracle records log-probabilities");
  const bool exspec_option = command.count("--window") + command.count("--max-wait") + command.count("--sort-by-length") > 0;
  if (engine != Engine::kExspec && exspec_option)
    throw InputError("--window, --max-wait and --sort-by-length apply to --engine exspec only");
  const std::optional<TreePolicy> tree = tree_policy(options.tree, command, drafting, options.draft);
  if (tree) check_tree_engine(command, engine);
  const int64_t window = options.decoder.exspec_window();
  validate(ExspecOptions{.batch_size = options.decoder.batch_size, .window = window, .max_wait_steps = options.max_wait});

  DecodeOptions decode;
  decode.draft_tokens = options.decoder.draft_tokens;
  decode.max_new_tokens = options.max_new_tokens;
  decode.sampling = options.sampling;
  validate(decode.sampling);
  decode.check_invariants = options.check_invariants;
  for (const std::string& name : options.faults) decode.faults.add(fault_from_name(name));
  require_committable(decode.faults, options.engine, is_exspec(engine), decode.sampling.greedy(), tree.has_value());

  const at::ScalarType dtype = options.loading.scalar_type();
  const c10::Device device = options.loading.torch_device();
  EngineSpec spec{.engine = engine, .drafting = drafting,
                  .decoder = {.decode = decode,
                              .batch_size = options.decoder.batch_size,
                              .exspec = {.window = window, .sort_by_prompt_length = options.sort_by_length,
                                         .max_wait_steps = options.max_wait}},
                  .top_logprobs = engine == Engine::kOracle ? options.top_logprobs : 0,
                  .tree = tree ? &*tree : nullptr};
  const std::string model_id = folder_name(options.target), draft_id = folder_name(options.draft);
  std::vector<Question> questions =
      select_questions(read_questions(options.bench), options.question_ids, options.limit, options.bench.string());
  // A resumed run answers what --out lacks, each question sampled from the stream it has in the
  // whole run, so that its answers are those an uninterrupted run gives; the answers it continues
  // must be this run's, made with the same settings.
  std::vector<uint64_t> streams;
  if (options.resume) {
    const nlohmann::json same_run = answer_json({.model_id = model_id, .chat_template = std::string(chat_template_name(chat_template)),
                                                 .run = run_settings(spec, dtype, draft_id)});
    const std::set<Answered> done =
        answered_in("--out", options.out, /*by_seed=*/false, [&same_run](const nlohmann::json&) { return same_run; });
    std::vector<Question> left;
    for (size_t q = 0; q < questions.size(); ++q) {
      if (done.contains({questions[q].question_id, std::nullopt})) continue;
      left.push_back(std::move(questions[q]));
      streams.push_back(q);
    }
    questions = std::move(left);
  }
  AnswerFile out("--out", options.out, {{"--target", options.target}, {"--draft", options.draft}, {"--bench", options.bench}},
                 options.resume);

  const bool every_prompt_given = questions_with_prompt_ids(questions) == static_cast<int64_t>(questions.size());
  const ModelPair models = load_model_pair(options.target, options.draft, dtype, device, !every_prompt_given);
  const Transformer& target = models.target;
  spec.target = &target;
  spec.draft = models.draft_or_null();
  spec.decoder.decode.eos_ids = target.config().eos_token_ids;
  const PromptFormat format{models.tokenizer.get(), chat_template};
  if (format.tokenizer != nullptr) check_template_tokens(format, "--chat-template");
  questions = drop_or_refuse_long_prompts(std::move(questions), format, target, options);

  const EngineRun run{.spec = spec, .tokenizer = models.tokenizer.get(), .chat_template = chat_template,
                      .all_turns = options.turns == "all", .model_id = model_id, .draft_id = draft_id,
                      .stopping = [] { return StopSignals::stop_requested().load(); }, .streams = std::move(streams)};

  // Each answer is written, whole, as soon as it is complete: a run stopped by a verdict leaves
  // the answers before it, each on its own complete line; a run that fails leaves --out as it was.
  EngineOutput output;
  try {
    const StopSignals signals("\ngenerate: stopping before the next round; the finished answers are kept\n");
    ProgressBar progress("generate", static_cast<int64_t>(questions.size()));
    output = run_engine(run, questions, [&](const Answer& answer) {
      out.write(answer);
      progress.update(static_cast<int64_t>(out.lines()), "question " + std::to_string(answer.question_id));
    });
  } catch (const LocatedViolation& violation) {
    out.commit();
    throw Verdict(verdict_line(violation, run.all_turns, out.lines(), options.out));
  }
  out.commit();
  if (StopSignals::stop_requested().load())
    throw Interrupted("generate: interrupted; " + counted(static_cast<int64_t>(out.lines()), "answer") + " written to " +
                      options.out.string() + ", " + std::to_string(questions.size() - out.lines()) + " left; --resume continues");
  const EngineTally& tally = output.tally;

  std::printf("%s: %zu questions, %lld tokens in %.2f s (%.1f tokens/s)", options.engine.c_str(), questions.size(),
              static_cast<long long>(tally.tokens), tally.seconds, tally.tokens / std::max(tally.seconds, 1e-9));
  if (speculates(engine))
    std::printf(", accepted/drafted %s, %.2f tokens per round", percent(tally.stats.acceptance_rate()).c_str(),
                tally.stats.tokens_per_round());
  if (engine == Engine::kExspec) std::printf(", grouping rate %.3f", tally.exspec_stats.grouping_rate());
  std::printf("; wrote %s\n", options.out.string().c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* c = app.add_subcommand("generate", "Generate answers to a Spec-Bench question file with one engine");
  c->add_option("--engine", o->engine, "oracle, nonspec-batch, eqspec, exspec or rollback")->required();
  c->add_option("--target", o->target, "Target checkpoint folder")->required();
  c->add_option("--draft", o->draft, "Draft checkpoint folder (eqspec, exspec, rollback with --drafter model)");
  c->add_option("--bench", o->bench, "Spec-Bench question.jsonl")->required();
  c->add_option("--out", o->out, "Answer JSONL to write")->required();
  c->add_flag("--resume", o->resume, "Answer only the questions --out lacks, and append");
  add_decoder_flags(*c, o->decoder);
  c->add_option("--max-wait", o->max_wait, "exspec: most steps in a row a sequence may be left out (0: no bound)")
      ->check(CLI::NonNegativeNumber);
  c->add_flag("--sort-by-length", o->sort_by_length, "exspec: admit the shortest prompts first");
  c->add_option("--turns", o->turns, "first, or all turns of multi-turn questions")
      ->capture_default_str()
      ->check(CLI::IsMember({"first", "all"}));
  c->add_option("--max-new-tokens", o->max_new_tokens, "Tokens per answer")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  add_sampling_flags(*c, o->sampling, SamplingUse::kDecode);
  add_model_flags(*c, o->loading, "dtype of target and draft");
  c->add_option("--limit", o->limit, "Only the first N questions")->check(CLI::NonNegativeNumber);
  c->add_option("--question-ids", o->question_ids, "Only these questions, in this order")->delimiter(',');
  c->add_flag("--check-invariants", o->check_invariants, "Check I1-I4 after every round (slow)");
  c->add_option("--inject-fault", o->faults, "Seed a named fault (repeatable)");
  c->add_option("--top-logprobs", o->top_logprobs, "Alternatives recorded per token (oracle)")->check(CLI::Range(0, 100));
  add_tree_flags(*c, o->tree);
  c->add_flag("--skip-long-prompts", o->skip_long_prompts, "Skip questions that do not fit the context");
  c->add_option("--chat-template", o->chat_template,
                "Prompt format where the bench line has no prompt_token_ids: raw (the question after BOS), vicuna, "
                "chatml, smollm2, llama3 or llama2")
      ->capture_default_str();
  c->callback([o, c] { run_generate(*o, *c); });
}

}  // namespace specgate::cli
