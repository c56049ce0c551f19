#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "conformance/bench/bench_runner.h"

namespace specgate::cli {

// The `results` list of a benchmark report: one object per measurement with its throughput,
// its speedups against nonspec-batch at the same batch size and at batch size 1 (both
// measured in the same run) with each speedup's least and greatest value over the repeats
// (`..._spread`: {min, max}, each repeat against the baseline's run of the same pass), the
// seconds of each phase and their fractions summing to 1, acceptance, tokens per round,
// grouping rate (EXSPEC), latency percentiles and peak memory.
nlohmann::ordered_json results_json(const std::vector<Measurement>& measurements);

// The ticks of an axis from 0 that reaches `top` (1 where it is not positive): 0, s, 2s, ... up
// to the first at or above `top`, the step s being 1, 2 or 5 times a power of ten, the least
// that needs at most five intervals.
std::vector<double> nice_ticks(double top);

// The results as a table, one row of cells per measurement: engine, batch size, tokens/s, the
// two speedups with their least and greatest repeat, phase shares, acceptance, tokens, operators
// and host syncs per round, grouping rate, and latency percentiles. The terminal and the
// Markdown report show the same cells.
std::vector<std::string> table_header();
std::vector<std::vector<std::string>> table_rows(const std::vector<Measurement>& measurements);

// A Markdown report: the title as a heading, `settings` as a line of key: value, and the table.
std::string results_markdown(const std::vector<Measurement>& measurements, const std::string& title,
                             const std::vector<std::pair<std::string, std::string>>& settings);

// An SVG with three charts against batch size: generated tokens/s, the speedup over
// nonspec-batch at the same batch size (a dashed line at 1x), and the share of time spent
// re-laying out the caches. Each engine has a line through circles whose hover text gives the
// value, with a whisker from the least to the greatest repeat where there are several.
std::string results_svg(const std::vector<Measurement>& measurements, const std::string& title);

}  // namespace specgate::cli
