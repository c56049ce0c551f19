#include "property_tests/properties/mutant_runner.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include <rapidcheck.h>

#include "property_tests/properties/decode_properties.h"
#include "property_tests/properties/sampling_distribution.h"

namespace specgate::props {
namespace {

namespace rcd = rc::detail;

class ShrinkCounter final : public rcd::TestListener {
 public:
  void onTestCaseFinished(const rcd::CaseDescription&) override {}
  void onShrinkTried(const rcd::CaseDescription&, bool accepted) override { shrinks += accepted ? 1 : 0; }
  void onTestFinished(const rcd::TestMetadata&, const rcd::TestResult&) override {}
  int64_t shrinks = 0;
};

}  // namespace

bool find_counterexample(const DecodeProperty& property, const FaultSet& faults, const MutantRunOptions& options,
                  MutantOutcome& outcome) {
  std::optional<std::pair<DecodeCase, std::string>> last_failure;
  const rcd::Property rc_property = rcd::toProperty([&] {
    check_generated_case(property, faults,
                         [&](const DecodeCase& c, const std::string& verdict) { last_failure.emplace(c, verdict); });
  });
  rcd::TestParams params;
  params.seed = options.seed;
  params.maxSuccess = options.cases;
  params.maxSize = options.max_size;
  params.disableShrinking = !options.shrink;
  const rcd::TestMetadata metadata{std::string(property.name), std::string(property.statement)};
  ShrinkCounter listener;
  const rcd::TestResult result = rcd::checkProperty(rc_property, metadata, params, listener);
  if (result.is<rcd::FailureResult>() && last_failure) {
    outcome.killed = true;
    outcome.property = property.name;
    outcome.cases = result.get<rcd::FailureResult>().numSuccess + 1;
    outcome.shrinks = listener.shrinks;
    outcome.verdict = last_failure->second;
    outcome.decode_case = last_failure->first;
    outcome.counterexample = summary(last_failure->first);
    return true;
  }
  if (options.progress && !result.is<rcd::SuccessResult>()) {
    std::ostringstream message;
    rcd::printResultMessage(result, message);
    options.progress("  " + std::string(property.name) + ": " + message.str());
  }
  return false;
}

namespace {

std::string describe(const DistributionScenario& scenario, const DistributionTestResult& verdict) {
  std::ostringstream out;
  out << "scenario " << scenario.name << ": chi-square " << verdict.fit.statistic << " on "
      << verdict.fit.degrees_of_freedom << " degrees of freedom, p = " << verdict.fit.p_value << " < "
      << kDistributionAlpha << " over " << verdict.fit.samples << " samples";
  if (verdict.fit.outside_support > 0) out << " (" << verdict.fit.outside_support << " outside the support)";
  return out.str();
}

// The distribution test over the panel; a failing scenario is simplified while it still fails.
bool try_distribution(const FaultSet& faults, const MutantRunOptions& options, MutantOutcome& outcome) {
  const std::vector<DistributionScenario> panel = distribution_panel();
  for (size_t i = 0; i < panel.size(); ++i) {
    DistributionTestResult verdict = distribution_test(panel[i], faults);
    if (!verdict.rejected) continue;
    DistributionScenario smallest = panel[i];
    for (bool simpler = options.shrink; simpler;) {
      simpler = false;
      for (const DistributionScenario& candidate : simplifications(smallest)) {
        const DistributionTestResult candidate_verdict = distribution_test(candidate, faults);
        if (candidate_verdict.rejected) {
          smallest = candidate;
          verdict = candidate_verdict;
          ++outcome.shrinks;
          simpler = true;
          break;
        }
      }
    }
    outcome.killed = true;
    outcome.property = kDistributionProperty;
    outcome.cases = static_cast<int64_t>(i) + 1;
    outcome.verdict = describe(smallest, verdict);
    outcome.counterexample = summary(smallest);
    return true;
  }
  return false;
}

}  // namespace

MutantOutcome run_mutant(Fault fault, const MutantRunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  MutantOutcome outcome;
  outcome.fault = fault;
  FaultSet faults;
  faults.add(fault);
  // The distribution test, which targets the sampling faults, goes first for them.
  const std::vector<Fault> sampling = sampling_faults();
  const bool sampling_fault = std::find(sampling.begin(), sampling.end(), fault) != sampling.end();
  bool killed = sampling_fault && try_distribution(faults, options, outcome);
  for (const DecodeProperty& property : decode_properties()) {
    if (killed) break;
    killed = find_counterexample(property, faults, options, outcome);
  }
  if (!killed && !sampling_fault) try_distribution(faults, options, outcome);
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

nlohmann::json to_json(const MutantOutcome& outcome) {
  nlohmann::json out = {{"name", fault_name(outcome.fault)}, {"killed", outcome.killed}, {"seconds", outcome.seconds}};
  if (!outcome.killed) return out;
  out["property"] = outcome.property;
  out["cases"] = outcome.cases;
  out["shrinks"] = outcome.shrinks;
  out["verdict"] = outcome.verdict;
  out["counterexample"] = outcome.counterexample;
  if (outcome.decode_case) out["case"] = props::to_json(*outcome.decode_case);
  return out;
}

}  // namespace specgate::props
