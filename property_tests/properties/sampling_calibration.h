#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "impl/decoding/faults.h"

namespace specgate::props {

// How often the distribution test rejects over many sampling seeds: the correct decoders'
// rejections are false alarms, a sampling mutant's are detections.
struct CalibrationRow {
  std::string decoders;                 // "correct" or a fault's name
  std::vector<int64_t> rejections;      // per panel scenario: seeds it was the first to reject
  int64_t panel_rejections = 0;         // seeds where a scenario rejected
  double min_p_value = 1.0;             // over the scenarios run
  double max_p_value = 0.0;
};

struct SamplingCalibration {
  int64_t seeds = 0;
  uint64_t first_seed = 0;
  double alpha = 0.0;
  std::vector<std::string> scenarios;
  std::vector<CalibrationRow> rows;  // the correct decoders first, then each sampling fault
};

// Runs every panel scenario with `seeds` different sampling seeds (first_seed, first_seed + 1,
// ...), with the correct decoders and with each sampling fault injected.
SamplingCalibration calibrate_sampling(int64_t seeds, uint64_t first_seed,
                                       const std::function<void(const std::string&)>& progress = {});

nlohmann::json to_json(const SamplingCalibration& calibration);

}  // namespace specgate::props
