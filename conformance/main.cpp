#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include "conformance/commands/commands.h"
#include "conformance/commands/verdict.h"
#include "impl/common/allocator_tuning.h"
#include "impl/common/cpu_threads.h"
#include "impl/common/error.h"

namespace {

constexpr int kCheckFailed = 1;
constexpr int kUsageOrInputError = 2;

}  // namespace

int main(int argc, char** argv) {
  specgate::keep_freed_memory_for_reuse();
  specgate::configure_cpu_threads();
  CLI::App app{"specgate conformance: batch speculative decoding against a non-speculative reference"};
  app.require_subcommand(1);
  specgate::cli::add_fixtures_command(app);
  specgate::cli::add_demo_command(app);
  specgate::cli::add_generate_command(app);
  specgate::cli::add_bench_command(app);
  specgate::cli::add_score_command(app);
  specgate::cli::add_mutants_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "conformance: error: " << e.what() << "\n";
    return kUsageOrInputError;
  } catch (const specgate::cli::Verdict& e) {
    if (*e.what() != '\0') std::cerr << "conformance: " << e.what() << "\n";
    return kCheckFailed;
  } catch (const specgate::cli::CheckFailed&) {
    return kCheckFailed;
  } catch (const specgate::InputError& e) {
    std::cerr << "conformance: error: " << e.what() << "\n";
    return kUsageOrInputError;
  } catch (const c10::Error& e) {
    std::cerr << "conformance: internal error: " << e.what_without_backtrace() << "\n";
    return 3;
  }
  return 0;
}
