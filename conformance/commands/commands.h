#pragma once

#include <exception>

#include <CLI/App.hpp>

namespace specgate::cli {

// Each adds one subcommand to the `conformance` executable; the callback it sets runs the
// command and throws InputError on bad input.
void add_fixtures_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_score_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_mutants_command(CLI::App& app);
void add_collect_command(CLI::App& app);
void add_serve_command(CLI::App& app);

// Thrown by a command that ran to the end, its reports written, but whose check failed (the
// score gate); main() exits 1.
class CheckFailed : public std::exception {
 public:
  const char* what() const noexcept override { return "check failed"; }
};

}  // namespace specgate::cli
