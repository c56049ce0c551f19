#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/seed_check.h"
#include "conformance/commands/verdict.h"
#include "conformance/files/output_file.h"
#include "impl/common/error.h"
#include "impl/decoding/faults.h"
#include "property_tests/properties/fault_coverage.h"
#include "property_tests/properties/mutant_runner.h"
#include "property_tests/properties/regression_file.h"
#include "property_tests/properties/sampling_calibration.h"

namespace specgate::cli {
namespace {

struct MutantsOptions {
  std::filesystem::path json;
  std::filesystem::path regressions;
  std::vector<std::string> faults;
  int cases = 100;
  uint64_t seed = 1;
  bool no_shrink = false;
  int64_t calibration_seeds = 0;
  int64_t coverage_trials = 0;
  std::filesystem::path markdown;
};

void write_json(const std::filesystem::path& path, const nlohmann::json& report) {
  write_output_file("--json", path, [&](std::ostream& out) { out << report.dump(2) << "\n"; });
}

std::string shape(const props::MutantOutcome& outcome) {
  const nlohmann::json& c = outcome.counterexample;
  std::string text = "batch " + c.at("batch_size").dump() + ", prompts " + c.at("prompt_lengths").dump() + ", K " +
                     c.at("k").dump() + ", " + c.at("decoder").get<std::string>();
  if (c.contains("tree")) text += ", tree " + c.at("tree").dump();
  if (c.contains("trees")) text += ", trees " + c.at("trees").dump();
  if (c.contains("script")) text += ", script " + c.at("script").at("accepts").dump();
  return text;
}

std::vector<Fault> chosen_faults(const std::vector<std::string>& names) {
  if (names.empty()) return all_faults();
  std::vector<Fault> faults;
  for (const std::string& name : names) {
    std::string known;
    for (Fault fault : all_faults()) {
      if (fault_name(fault) == name) faults.push_back(fault);
      known += (known.empty() ? "" : ", ") + std::string(fault_name(fault));
    }
    if (faults.empty() || fault_name(faults.back()) != name)
      throw InputError("--fault: unknown fault '" + name + "' (known: " + known + ")");
  }
  return faults;
}

void run_mutants(const MutantsOptions& o) {
  // The runner passes its own seed to every property; without RC_PARAMS, RapidCheck would
  // still draw and print a global seed that plays no part.
  setenv("RC_PARAMS", ("seed=" + std::to_string(o.seed)).c_str(), /*overwrite=*/0);
  const std::vector<Fault> faults = chosen_faults(o.faults);
  const props::MutantRunOptions run{.cases = o.cases, .seed = o.seed, .shrink = !o.no_shrink,
                                    .progress = [](const std::string& line) { std::cerr << line << "\n"; }};

  nlohmann::json mutants = nlohmann::json::array();
  int64_t killed = 0;
  for (Fault fault : faults) {
    const props::MutantOutcome outcome = props::run_mutant(fault, run);
    mutants.push_back(props::to_json(outcome));
    if (outcome.killed) {
      ++killed;
      std::printf("%-28s killed by %-21s after %3lld cases (%.1f s): %s\n", std::string(fault_name(fault)).c_str(),
                  outcome.property.c_str(), static_cast<long long>(outcome.cases), outcome.seconds, shape(outcome).c_str());
      if (!o.regressions.empty() && outcome.decode_case) {
        const props::RegressionCase regression{outcome.property, fault, outcome.verdict,
                                               "conformance mutants --seed " + std::to_string(o.seed),
                                               *outcome.decode_case};
        std::printf("  wrote %s\n", props::write_regression(o.regressions, regression).string().c_str());
      }
    } else {
      std::printf("%-28s SURVIVED (%.1f s)\n", std::string(fault_name(fault)).c_str(), outcome.seconds);
    }
    std::fflush(stdout);
  }
  const double kill_rate = static_cast<double>(killed) / static_cast<double>(faults.size());
  std::printf("kill rate %lld/%zu = %.3f\n", static_cast<long long>(killed), faults.size(), kill_rate);
  if (!o.json.empty()) {
    write_json(o.json, {{"cases_per_property", o.cases},
                        {"seed", o.seed},
                        {"shrink", !o.no_shrink},
                        {"mutants", mutants},
                        {"killed", killed},
                        {"total", faults.size()},
                        {"kill_rate", kill_rate}});
    std::printf("wrote %s\n", o.json.string().c_str());
  }
  std::fflush(stdout);
  if (killed < static_cast<int64_t>(faults.size())) throw Verdict();
}

// The distribution test's false-alarm rate and its power against each sampling mutant.
void run_calibration(const MutantsOptions& o) {
  const props::SamplingCalibration calibration = props::calibrate_sampling(
      o.calibration_seeds, o.seed, [](const std::string& line) { std::cerr << line << "\n"; });
  for (const props::CalibrationRow& row : calibration.rows) {
    std::printf("%-26s %s %lld/%lld = %.3f (p from %.3g to %.3g)\n", row.decoders.c_str(),
                row.decoders == "correct" ? "false alarms" : "detections  ", static_cast<long long>(row.panel_rejections),
                static_cast<long long>(calibration.seeds),
                static_cast<double>(row.panel_rejections) / static_cast<double>(calibration.seeds), row.min_p_value,
                row.max_p_value);
  }
  if (!o.json.empty()) {
    write_json(o.json, props::to_json(calibration));
    std::printf("wrote %s\n", o.json.string().c_str());
  }
  std::fflush(stdout);
}

// How many realignments each greedy fault needs before it shows in the answers.
void run_fault_coverage(const MutantsOptions& o) {
  const props::FaultCoverageTable table = props::measure_fault_coverage(
      {.trials = o.coverage_trials, .seed = o.seed, .faults = o.faults.empty() ? std::vector<Fault>{} : chosen_faults(o.faults),
       .progress = [](const std::string& line) { std::cerr << line << "\n"; }});
  const std::string markdown = props::to_markdown(table);
  std::fputs(markdown.c_str(), stdout);
  if (!o.markdown.empty())
    write_output_file("--markdown", o.markdown, [&](std::ostream& out) { out << markdown; });
  if (!o.json.empty()) write_json(o.json, props::to_json(table));
  std::fflush(stdout);
}

}  // namespace

void add_mutants_command(CLI::App& app) {
  auto o = std::make_shared<MutantsOptions>();
  CLI::App* c = app.add_subcommand(
      "mutants", "Run the property suite against every injectable fault; exits 1 when a mutant survives");
  c->add_option("--json", o->json, "Write, per mutant, whether and how it was killed, and the kill rate");
  c->add_option("--fault", o->faults, "Only these faults (repeatable; default: all)");
  c->add_option("--cases", o->cases, "RapidCheck cases per property")->capture_default_str()->check(CLI::Range(1, 1000000));
  c->add_option("--seed", o->seed, "RapidCheck seed of every property")->capture_default_str()->check(seed_check());
  c->add_flag("--no-shrink", o->no_shrink, "Report the first failing case as found");
  c->add_option("--regressions", o->regressions,
                "Write each shrunk counterexample here as a regression file naming its fault");
  c->add_option("--sampling-calibration", o->calibration_seeds,
                "Instead, run the sampling distribution test over this many seeds (from --seed) with the correct "
                "decoders and each sampling mutant: its false-alarm rate and power")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  c->add_option("--fault-coverage", o->coverage_trials,
                "Instead, measure over this many runs per fault, decoder and ragged-round count how many realignments "
                "each greedy fault needs before it shows in the answers")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  c->add_option("--markdown", o->markdown, "With --fault-coverage, write its table here too");
  c->callback([o] {
    if (o->coverage_trials > 0) return run_fault_coverage(*o);
    o->calibration_seeds > 0 ? run_calibration(*o) : run_mutants(*o);
  });
}

}  // namespace specgate::cli
