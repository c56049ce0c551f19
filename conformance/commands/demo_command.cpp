#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include "conformance/commands/commands.h"
#include "fixtures/bench/embedded_sample_bench.h"
#include "fixtures/models/default_fixtures.h"
#include "impl/bench/answer.h"
#include "impl/bench/question.h"
#include "impl/checkpoint/model_io.h"
#include "impl/common/error.h"
#include "impl/tokenizer/tokenizer.h"
#include "oracle/oracle.h"

namespace specgate::cli {
namespace {

struct DemoOptions {
  std::filesystem::path out = "reports/demo";
  uint64_t seed = 0;
  int64_t max_new_tokens = 64;
};

// The first `width` bytes of `text` on one line, with control characters shown as spaces.
std::string preview(const std::string& text, size_t width) {
  std::string line;
  for (char c : text.substr(0, width)) line.push_back(static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
  return line;
}

void run_demo(const DemoOptions& options) {
  using Clock = std::chrono::steady_clock;
  const std::filesystem::path fixtures = options.out / "fixtures";
  std::cout << "building the fixture pair in " << fixtures.string() << " ...\n";
  const DraftAgreement agreement = build_default_fixtures(fixtures, options.seed);
  std::printf("draft agrees with the target's greedy choice at %.1f%% of %lld positions\n\n", 100 * agreement.rate(),
              static_cast<long long>(agreement.positions));

  const Transformer target = load_transformer(fixtures / "target", at::kFloat, at::kCPU);
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(fixtures / "target");
  std::istringstream bench{std::string(embedded_sample_bench())};
  const std::vector<Question> questions = read_questions(bench, "embedded sample bench");

  OracleOptions oracle;
  oracle.max_new_tokens = options.max_new_tokens;
  oracle.eos_ids = target.config().eos_token_ids;
  const std::filesystem::path answers_path = options.out / "oracle.jsonl";
  std::ofstream answers(answers_path);

  std::printf("%-5s %-15s %7s %7s  %s\n", "id", "category", "prompt", "new", "oracle output (first 60 bytes)");
  int64_t total_tokens = 0;
  double total_seconds = 0.0;
  for (size_t i = 0; i < questions.size(); ++i) {
    const Question& question = questions[i];
    const std::vector<int64_t> prompt = tokenizer->encode_prompt(question.turns.front());
    const auto start = Clock::now();
    const OracleOutput output = oracle_generate(target, prompt, oracle, i);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    total_tokens += static_cast<int64_t>(output.tokens.size());
    total_seconds += seconds;

    AnswerTurn turn{.text = tokenizer->decode(output.tokens), .token_ids = output.tokens,
                    .decoding_steps = static_cast<int64_t>(output.tokens.size()), .wall_time = seconds,
                    .top_logprobs = output.top_logprobs};
    std::printf("%-5lld %-15s %7zu %7zu  %s\n", static_cast<long long>(question.question_id), question.category.c_str(),
                prompt.size(), output.tokens.size(), preview(turn.text, 60).c_str());
    write_answer_line(answers, {.question_id = question.question_id, .category = question.category,
                                .answer_id = "oracle-" + std::to_string(question.question_id),
                                .model_id = "specgate-fixture-target", .turns = {std::move(turn)}});
  }
  if (!answers) throw InputError(answers_path.string() + ": cannot write");
  std::printf("\noracle: %zu questions, %lld tokens in %.2f s (%.1f tokens/s, %d threads); answers in %s\n",
              questions.size(), static_cast<long long>(total_tokens), total_seconds, total_tokens / total_seconds,
              at::get_num_threads(), answers_path.string().c_str());
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto options = std::make_shared<DemoOptions>();
  CLI::App* command = app.add_subcommand("demo", "The main job on the embedded default: fixture pair, then the oracle over the sample bench");
  command->add_option("--out", options->out, "Folder for the fixtures and answers")->capture_default_str();
  command->add_option("--seed", options->seed, "Fixture seed")->capture_default_str();
  command->add_option("--max-new-tokens", options->max_new_tokens, "Tokens generated per question")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  command->callback([options] {
    std::filesystem::create_directories(options->out);
    run_demo(*options);
  });
}

}  // namespace specgate::cli
