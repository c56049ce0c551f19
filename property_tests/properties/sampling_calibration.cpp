#include "property_tests/properties/sampling_calibration.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "property_tests/properties/sampling_distribution.h"

namespace specgate::props {
namespace {

// A scenario's own seed stays part of the stream, so two scenarios never share draws.
DistributionScenario reseeded(DistributionScenario scenario, uint64_t seed) {
  scenario.sampling.seed = scenario.sampling.seed * 1000003ull + seed;
  return scenario;
}

// Like the mutant runner, a seed's panel stops at its first rejecting scenario.
CalibrationRow measure(const std::string& label, const FaultSet& faults, const std::vector<DistributionScenario>& panel,
                       int64_t seeds, uint64_t first_seed) {
  CalibrationRow row{label, std::vector<int64_t>(panel.size(), 0)};
  for (int64_t s = 0; s < seeds; ++s) {
    for (size_t i = 0; i < panel.size(); ++i) {
      const DistributionTestResult verdict = distribution_test(reseeded(panel[i], first_seed + s), faults);
      row.min_p_value = std::min(row.min_p_value, verdict.fit.p_value);
      row.max_p_value = std::max(row.max_p_value, verdict.fit.p_value);
      if (verdict.rejected) {
        ++row.rejections[i];
        ++row.panel_rejections;
        break;
      }
    }
  }
  return row;
}

}  // namespace

SamplingCalibration calibrate_sampling(int64_t seeds, uint64_t first_seed,
                                       const std::function<void(const std::string&)>& progress) {
  const std::vector<DistributionScenario> panel = distribution_panel();
  SamplingCalibration calibration{seeds, first_seed, kDistributionAlpha};
  for (const DistributionScenario& scenario : panel) calibration.scenarios.push_back(scenario.name);
  auto report = [&](const CalibrationRow& row) {
    if (progress) progress(row.decoders + ": rejected at " + std::to_string(row.panel_rejections) + " of " + std::to_string(seeds) + " seeds");
  };
  report(calibration.rows.emplace_back(measure("correct", FaultSet{}, panel, seeds, first_seed)));
  for (Fault fault : sampling_faults()) {
    FaultSet faults;
    faults.add(fault);
    report(calibration.rows.emplace_back(measure(std::string(fault_name(fault)), faults, panel, seeds, first_seed)));
  }
  return calibration;
}

nlohmann::json to_json(const SamplingCalibration& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CalibrationRow& row : c.rows) {
    nlohmann::json per_scenario;
    for (size_t i = 0; i < c.scenarios.size(); ++i) per_scenario[c.scenarios[i]] = row.rejections[i];
    const double rate = static_cast<double>(row.panel_rejections) / static_cast<double>(c.seeds);
    rows.push_back({{"decoders", row.decoders},
                    {row.decoders == "correct" ? "false_alarm_rate" : "power", rate},
                    {"panel_rejections", row.panel_rejections},
                    {"first_rejecting_scenario", per_scenario},
                    {"min_p_value", row.min_p_value},
                    {"max_p_value", row.max_p_value}});
  }
  return {{"seeds", c.seeds}, {"first_seed", c.first_seed}, {"alpha_per_scenario", c.alpha},
          {"scenarios", c.scenarios}, {"rows", rows}};
}

}  // namespace specgate::props
