#pragma once

#include <CLI/App.hpp>

namespace specgate::cli {

// Each adds one subcommand to the `conformance` executable; the callback it sets runs the
// command and throws InputError on bad input.
void add_fixtures_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_score_command(CLI::App& app);
void add_sampling_command(CLI::App& app);
void add_acceptance_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_mutants_command(CLI::App& app);
void add_collect_command(CLI::App& app);
void add_differential_command(CLI::App& app);
void add_serve_command(CLI::App& app);

}  // namespace specgate::cli
