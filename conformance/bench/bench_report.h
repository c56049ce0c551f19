#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "conformance/bench/bench_runner.h"

namespace specgate::cli {

// The `results` list of a benchmark report: one object per measurement with its throughput,
// its speedups against nonspec-batch at the same batch size and at batch size 1 (both
// measured in the same run) with each speedup's least and greatest value over the repeats
// (`..._spread`: {min, max}, each repeat against the baseline's run of the same pass), phase fractions summing to 1, acceptance, tokens per round,
// grouping rate (EXSPEC), latency percentiles and peak memory.
nlohmann::ordered_json results_json(const std::vector<Measurement>& measurements);

// An SVG with two charts against batch size, one line per engine: generated tokens/s, and
// the share of time spent re-laying out the caches.
std::string results_svg(const std::vector<Measurement>& measurements, const std::string& title);

}  // namespace specgate::cli
