#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
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
    specgate::cli::add_tokenize_command(app);
    specgate::cli::add_mutants_command(app);
    specgate::cli::add_collect_command(app);
    specgate::cli::add_serve_command(app);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (...) {
    return report_current_exception();
  }
  return kDone;
}
