#include "impl/reports/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "impl/reports/markup.h"

namespace specgate {
namespace {

constexpr double kWidth = 760;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string text_element(double x, double y, const std::string& anchor, const std::string& text,
                         const std::string& extra = "") {
  return "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" +
         escape_markup(text) + "</text>";
}

std::string rect(double x, double y, double width, double height, const std::string& color, const std::string& title) {
  return "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(std::max(width, 0.0)) +
         "\" height=\"" + number(std::max(height, 0.0)) + "\" fill=\"" + escape_markup(color) + "\"><title>" +
         escape_markup(title) + "</title></rect>";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& color) {
  return "<line x1=\"" + number(x1) + "\" y1=\"" + number(y1) + "\" x2=\"" + number(x2) + "\" y2=\"" + number(y2) +
         "\" stroke=\"" + color + "\"/>";
}

std::string legend(const std::vector<ChartSeries>& series, double x, double y) {
  std::string out;
  for (const ChartSeries& s : series) {
    out += rect(x, y - 10, 12, 12, s.color, s.name);
    out += text_element(x + 17, y, "start", s.name);
    x += 30 + 7.5 * static_cast<double>(s.name.size());
  }
  return out;
}

std::string svg_open(double height, const std::string& label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + number(kWidth) + " " + number(height) +
         "\" width=\"" + number(kWidth) + "\" height=\"" + number(height) + "\" role=\"img\" aria-label=\"" +
         escape_markup(label) + "\" font-family=\"system-ui, sans-serif\" font-size=\"12\" fill=\"#222\">";
}

std::string percent_text(double fraction) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

// The smallest of 1, 2, 5, 10, 20, 50, ... at least `minimum`.
int64_t nice_step(double minimum) {
  int64_t scale = 1;
  while (true) {
    for (int64_t factor : {1, 2, 5}) {
      if (static_cast<double>(factor * scale) >= minimum) return factor * scale;
    }
    scale *= 10;
  }
}

}  // namespace

std::string percent_bars_svg(const std::vector<ChartSeries>& series, const std::vector<BarGroup>& groups) {
  constexpr double kLeft = 150, kRight = 70, kTop = 44, kBar = 16, kGap = 14;
  const double plot = kWidth - kLeft - kRight;
  const double group_height = kBar * static_cast<double>(series.size()) + kGap;
  const double height = kTop + group_height * static_cast<double>(groups.size()) + 8;
  std::string svg = svg_open(height, "exact and partial match per subtask");
  svg += legend(series, kLeft, 16);
  for (int tick = 0; tick <= 4; ++tick) {
    const double x = kLeft + plot * tick / 4.0;
    svg += line(x, kTop - 6, x, height - 8, "#ddd");
    svg += text_element(x, kTop - 10, "middle", std::to_string(tick * 25) + "%", " fill=\"#666\"");
  }
  double y = kTop;
  for (const BarGroup& group : groups) {
    svg += text_element(kLeft - 8, y + group_height / 2 - 3, "end", group.label, " font-weight=\"600\"");
    for (size_t s = 0; s < series.size(); ++s) {
      const double fraction = std::clamp(group.fractions[s], 0.0, 1.0);
      const double bar_y = y + kBar * static_cast<double>(s);
      svg += rect(kLeft, bar_y, plot * fraction, kBar - 2, series[s].color,
                  group.label + ": " + series[s].name + " " + percent_text(fraction));
      svg += text_element(kLeft + plot * fraction + 4, bar_y + kBar - 5, "start", percent_text(fraction));
    }
    y += group_height;
  }
  return svg + "</svg>";
}

std::vector<HistogramBin> bin_positions(const std::vector<std::pair<int64_t, size_t>>& positions, size_t series_count,
                                        size_t max_bins) {
  if (positions.empty()) return {};
  int64_t largest = 0;
  for (const auto& [position, series] : positions) largest = std::max(largest, position);
  const int64_t width = nice_step(static_cast<double>(largest + 1) / static_cast<double>(max_bins));
  std::vector<HistogramBin> bins(static_cast<size_t>(largest / width + 1));
  for (size_t b = 0; b < bins.size(); ++b) {
    bins[b].begin = static_cast<int64_t>(b) * width;
    bins[b].end = bins[b].begin + width;
    bins[b].counts.assign(series_count, 0);
  }
  for (const auto& [position, series] : positions) ++bins[static_cast<size_t>(position / width)].counts[series];
  return bins;
}

std::string stacked_histogram_svg(const std::vector<ChartSeries>& series, const std::vector<HistogramBin>& bins,
                                  const std::string& x_label) {
  constexpr double kLeft = 50, kRight = 16, kTop = 40, kBottom = 48, kPlotHeight = 200;
  const double height = kTop + kPlotHeight + kBottom;
  const double plot = kWidth - kLeft - kRight;
  int64_t tallest = 1;
  for (const HistogramBin& bin : bins) {
    int64_t total = 0;
    for (int64_t count : bin.counts) total += count;
    tallest = std::max(tallest, total);
  }
  const int64_t y_step = nice_step(static_cast<double>(tallest) / 5.0);
  const int64_t y_max = (tallest + y_step - 1) / y_step * y_step;
  const auto y_of = [&](double count) { return kTop + kPlotHeight * (1.0 - count / static_cast<double>(y_max)); };

  std::string svg = svg_open(height, "histogram of first-divergence positions");
  svg += legend(series, kLeft, 16);
  for (int64_t tick = 0; tick <= y_max; tick += y_step) {
    svg += line(kLeft, y_of(tick), kWidth - kRight, y_of(tick), tick == 0 ? "#888" : "#e4e4e4");
    svg += text_element(kLeft - 6, y_of(tick) + 4, "end", std::to_string(tick), " fill=\"#666\"");
  }
  const double slot = plot / static_cast<double>(std::max<size_t>(bins.size(), 1));
  const size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(48.0 / slot)));
  for (size_t b = 0; b < bins.size(); ++b) {
    const HistogramBin& bin = bins[b];
    const double x = kLeft + slot * static_cast<double>(b);
    const std::string range = bin.end - bin.begin == 1 ? std::to_string(bin.begin)
                                                       : std::to_string(bin.begin) + "–" + std::to_string(bin.end - 1);
    double stacked = 0;
    for (size_t s = 0; s < series.size(); ++s) {
      if (bin.counts[s] == 0) continue;
      const double top = y_of(stacked + static_cast<double>(bin.counts[s]));
      svg += rect(x + 1, top, slot - 2, y_of(stacked) - top, series[s].color,
                  "position " + range + ": " + std::to_string(bin.counts[s]) + " " + series[s].name);
      stacked += static_cast<double>(bin.counts[s]);
    }
    if (b % label_every == 0)
      svg += text_element(x + slot / 2, kTop + kPlotHeight + 16, "middle", std::to_string(bin.begin), " fill=\"#666\"");
  }
  svg += text_element(kLeft + plot / 2, height - 10, "middle", x_label);
  return svg + "</svg>";
}

}  // namespace specgate
