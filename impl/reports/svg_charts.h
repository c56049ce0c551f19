#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace specgate {

// Small inline SVG charts for the HTML report; text in them is escaped.

struct ChartSeries {
  std::string name;
  std::string color;  // CSS color
};

struct BarGroup {
  std::string label;
  std::vector<double> fractions;  // one per series, in [0, 1]
};

// Horizontal bars, one group per label and one bar per series, on a 0-100% axis.
std::string percent_bars_svg(const std::vector<ChartSeries>& series, const std::vector<BarGroup>& groups);

struct HistogramBin {
  int64_t begin = 0, end = 0;   // positions [begin, end)
  std::vector<int64_t> counts;  // one per series, stacked
};

// Positions (each with the index of its series) counted in bins of width 1, 2, 5, 10, 20,
// 50, ... from 0, the smallest width that needs at most `max_bins` bins.
std::vector<HistogramBin> bin_positions(const std::vector<std::pair<int64_t, size_t>>& positions, size_t series_count,
                                        size_t max_bins);

// A stacked histogram of the bins.
std::string stacked_histogram_svg(const std::vector<ChartSeries>& series, const std::vector<HistogramBin>& bins,
                                  const std::string& x_label);

}  // namespace specgate
