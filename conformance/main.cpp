#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <string_view>
#include <vector>
#include <string>

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/interrupted.h"
#include "conformance/commands/verdict.h"
#include "impl/common/allocator_tuning.h"
#include "impl/common/cpu_configuration.h"
#include "impl/common/error.h"

namespace {

constexpr int kDone = 0;
constexpr int kVerdict = 1;
constexpr int kBadInput = 2;
constexpr int kInternalError = 3;
constexpr int kInterrupted = 130;

constexpr const char* kExitCodes =
    "Exit codes: 0 done or gate passed; 1 a verdict against the input (gate failed, invariant violated, mutant\n"
    "survived); 2 bad input or usage (one line naming the file, line and field); 3 an internal error (please\n"
    "report it); 130 interrupted by SIGINT or SIGTERM after writing what was finished.";

int error(const std::string& message) {
  std::cerr << "conformance: error: " << message << "\n";
  return kBadInput;
}

int internal_error(const std::string& message) {
  std::cerr << "conformance: internal error: " << message
            << " (this is a bug in specgate: please report it with the command line that caused it)\n";
  return kInternalError;
}

// `while_decoding`: libtorch ran out, where --batch-size and --max-new-tokens set the need.
int out_of_memory(const std::string& detail, bool while_decoding) {
  std::cerr << "conformance: out of memory" << (detail.empty() ? "" : ": " + detail)
            << (while_decoding ? " (try a smaller --batch-size or --max-new-tokens, or a machine with more memory)\n"
                               : " (an input needs more memory than this machine has)\n");
  return kInternalError;
}

// The exit code and stderr line for the exception being handled.
int report_current_exception() {
  try {
    throw;
  } catch (const CLI::ParseError& e) {
    return error(e.what());
  } catch (const specgate::cli::Verdict& e) {
    if (*e.what() != '\0') std::cerr << "conformance: " << e.what() << "\n";
    return kVerdict;
  } catch (const specgate::cli::Interrupted& e) {
    std::cerr << "conformance: " << e.what() << "\n";
    return kInterrupted;
  } catch (const specgate::InputError& e) {
    return error(e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    std::string paths = e.path1().string();
    if (!e.path2().empty()) paths += ", " + e.path2().string();
    return error(paths + ": " + e.code().message());
  } catch (const c10::OutOfMemoryError& e) {
    return out_of_memory(e.what_without_backtrace(), true);
  } catch (const std::bad_alloc&) {
    return out_of_memory("", false);
  } catch (const c10::Error& e) {
    return internal_error(e.what_without_backtrace());
  } catch (const nlohmann::json::exception& e) {
    return internal_error(e.what());
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("an exception of unknown type");
  }
}

// Anything that reaches std::terminate (an exception leaving a destructor or a noexcept
// function) still ends with one line and exit code 3, never an abort.
[[noreturn]] void on_terminate() {
  if (std::current_exception()) {
    report_current_exception();
  } else {
    internal_error("terminated without an exception");
  }
  std::cerr.flush();
  std::fflush(stdout);
  std::_Exit(kInternalError);
}

// Edits (insertions, deletions, substitutions) that turn `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The command's option that `unknown` most likely meant: one it begins, else the nearest within
// two edits; "" when none is near.
std::string nearest_option(const CLI::App& command, const std::string& unknown) {
  std::string nearest;
  size_t best = 3;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& long_name : option->get_lnames()) {
      const std::string name = "--" + long_name;
      const size_t distance = name.starts_with(unknown) ? 0 : edit_distance(unknown, name);
      if (distance < best) best = distance, nearest = name;
    }
  }
  return nearest;
}

// "generate has no option --batch; did you mean --batch-size?" for the first argument that looks
// like an option the command does not have; nullopt when every one is known.
std::optional<std::string> unknown_option(const CLI::App& app) {
  for (const CLI::App* command : app.get_subcommands()) {
    for (const std::string& argument : command->remaining()) {
      if (!argument.starts_with("-")) continue;
      const std::string name = argument.substr(0, argument.find('='));
      std::string message = command->get_name() + " has no option " + name;
      if (const std::string nearest = nearest_option(*command, name); !nearest.empty()) message += "; did you mean " + nearest + "?";
      return message;
    }
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(on_terminate);
  specgate::keep_freed_memory_for_reuse();
  specgate::configure_cpu();
  CLI::App app{"specgate conformance: batch speculative decoding against a non-speculative reference"};
  app.footer(kExitCodes);  // subcommands copy it when they are added
  app.require_subcommand(1);
  try {
    specgate::cli::add_fixtures_command(app);
    specgate::cli::add_demo_command(app);
    specgate::cli::add_generate_command(app);
    specgate::cli::add_bench_command(app);
    specgate::cli::add_score_command(app);
    specgate::cli::add_sampling_command(app);
    specgate::cli::add_acceptance_command(app);
    specgate::cli::add_tokenize_command(app);
    specgate::cli::add_mutants_command(app);
    specgate::cli::add_collect_command(app);
    specgate::cli::add_differential_command(app);
    specgate::cli::add_serve_command(app);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError&) {
    // An unknown option explains the rest of CLI11's complaints ("--target is required").
    if (const std::optional<std::string> message = unknown_option(app)) return error(*message);
    return report_current_exception();
  } catch (...) {
    return report_current_exception();
  }
  return kDone;
}
