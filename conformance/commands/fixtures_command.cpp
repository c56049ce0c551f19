#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/seed_check.h"
#include "fixtures/models/default_fixtures.h"

namespace specgate::cli {

void add_fixtures_command(CLI::App& app) {
  struct Options {
    std::filesystem::path out;
    uint64_t seed = 0;
    std::filesystem::path measure_bench;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "fixtures", "Write the fixture target/draft pair (DIR/target, DIR/draft), trained on synthetic pseudo-language, and DIR/fixture_report.json");
  command->add_option("--out", options->out, "Folder to write into")->required();
  command->add_option("--seed", options->seed, "Seed of the weights, the training texts and the training order")
      ->check(seed_check());
  command->add_option("--measure-bench", options->measure_bench,
                      "A Spec-Bench question.jsonl on whose first turns the draft's agreement is also measured")
      ->check(CLI::ExistingFile);
  command->callback([options] {
    std::cout << fixture_summary(options->out,
                                 build_default_fixtures(options->out, options->seed, options->measure_bench));
  });
}

}  // namespace specgate::cli
