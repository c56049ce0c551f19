#include "conformance/bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "impl/reports/markup.h"

namespace specgate::cli {
namespace {

const Measurement* find(const std::vector<Measurement>& measurements, Engine engine, int64_t batch_size) {
  for (const Measurement& m : measurements) {
    if (m.engine == engine && m.batch_size == batch_size) return &m;
  }
  return nullptr;
}

nlohmann::ordered_json ratio(double numerator, const Measurement* baseline) {
  if (baseline == nullptr || baseline->tokens_per_s() <= 0) return nullptr;
  return numerator / baseline->tokens_per_s();
}

// The ratio's least and greatest value over the repeats, each repeat's run against the
// baseline's run of the same round-robin pass.
nlohmann::ordered_json ratio_spread(const Measurement& m, const Measurement* baseline) {
  if (baseline == nullptr || baseline->tokens <= 0) return nullptr;
  const size_t repeats = std::min(m.run_seconds.size(), baseline->run_seconds.size());
  double low = INFINITY, high = 0.0;
  for (size_t r = 0; r < repeats; ++r) {
    if (m.run_seconds[r] <= 0 || baseline->run_seconds[r] <= 0) return nullptr;
    const double value = (m.tokens / m.run_seconds[r]) / (baseline->tokens / baseline->run_seconds[r]);
    low = std::min(low, value);
    high = std::max(high, value);
  }
  if (repeats == 0) return nullptr;
  return {{"min", low}, {"max", high}};
}

double realign_share(const Measurement& m) {
  const DecodeStats& s = m.stats;
  const double total = s.draft_seconds + s.verify_seconds + s.realign_seconds + s.other_seconds;
  return total > 0 ? s.realign_seconds / total : 0.0;
}

nlohmann::ordered_json phase_fraction(const DecodeStats& s) {
  const double total = s.draft_seconds + s.verify_seconds + s.realign_seconds + s.other_seconds;
  const auto share = [total](double seconds) { return total > 0 ? seconds / total : 0.0; };
  return {{"draft", share(s.draft_seconds)},
          {"verify", share(s.verify_seconds)},
          {"realign", share(s.realign_seconds)},
          {"other", share(s.other_seconds)}};
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

constexpr const char* kColors[] = {"#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377"};

// One chart: x is log2(batch size), y from 0 to the largest value, a polyline per engine.
std::string line_chart(const std::vector<Measurement>& measurements, const std::vector<Engine>& engines,
                       const std::vector<int64_t>& batch_sizes, double (*value)(const Measurement&),
                       const std::string& y_label, double left) {
  constexpr double kWidth = 380, kHeight = 240, kTop = 40, kPlotLeft = 60, kPlotBottom = 40;
  double top = 0;
  for (const Measurement& m : measurements) top = std::max(top, value(m));
  top = top > 0 ? top * 1.1 : 1.0;
  const double plot_width = kWidth - kPlotLeft - 20, plot_height = kHeight - kPlotBottom;
  const double steps = std::max<double>(1, static_cast<double>(batch_sizes.size() - 1));
  auto x_of = [&](int64_t batch) {
    const auto at = std::find(batch_sizes.begin(), batch_sizes.end(), batch) - batch_sizes.begin();
    return left + kPlotLeft + plot_width * static_cast<double>(at) / steps;
  };
  auto y_of = [&](double v) { return kTop + plot_height * (1 - v / top); };

  std::string svg;
  svg += "<line x1='" + number(left + kPlotLeft) + "' y1='" + number(kTop + plot_height) + "' x2='" +
         number(left + kPlotLeft + plot_width) + "' y2='" + number(kTop + plot_height) + "' stroke='#333'/>";
  svg += "<line x1='" + number(left + kPlotLeft) + "' y1='" + number(kTop) + "' x2='" + number(left + kPlotLeft) +
         "' y2='" + number(kTop + plot_height) + "' stroke='#333'/>";
  for (int tick = 0; tick <= 4; ++tick) {
    const double v = top * tick / 4;
    svg += "<text x='" + number(left + kPlotLeft - 6) + "' y='" + number(y_of(v) + 4) +
           "' text-anchor='end' font-size='10'>" + number(v) + "</text>";
  }
  for (int64_t batch : batch_sizes) {
    svg += "<text x='" + number(x_of(batch)) + "' y='" + number(kTop + plot_height + 14) +
           "' text-anchor='middle' font-size='10'>" + std::to_string(batch) + "</text>";
  }
  svg += "<text x='" + number(left + kPlotLeft + plot_width / 2) + "' y='" + number(kTop + plot_height + 30) +
         "' text-anchor='middle' font-size='11'>batch size</text>";
  svg += "<text x='" + number(left + kPlotLeft) + "' y='" + number(kTop - 10) + "' font-size='12' font-weight='bold'>" +
         escape_markup(y_label) + "</text>";
  for (size_t e = 0; e < engines.size(); ++e) {
    std::string points;
    for (int64_t batch : batch_sizes) {
      if (const Measurement* m = find(measurements, engines[e], batch))
        points += number(x_of(batch)) + "," + number(y_of(value(*m))) + " ";
    }
    const std::string color = kColors[e % std::size(kColors)];
    svg += "<polyline fill='none' stroke='" + color + "' stroke-width='2' points='" + points + "'/>";
  }
  return svg;
}

}  // namespace

nlohmann::ordered_json results_json(const std::vector<Measurement>& measurements) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  const Measurement* batch1 = find(measurements, Engine::kNonspecBatch, 1);
  for (const Measurement& m : measurements) {
    const Measurement* same_batch = find(measurements, Engine::kNonspecBatch, m.batch_size);
    const bool exspec = is_exspec(m.engine);
    nlohmann::ordered_json r;
    r["engine"] = engine_name(m.engine);
    r["batch_size"] = m.batch_size;
    r["tokens_per_s"] = m.tokens_per_s();
    r["speedup_vs_nonspec_same_batch"] = ratio(m.tokens_per_s(), same_batch);
    r["speedup_vs_nonspec_batch1"] = ratio(m.tokens_per_s(), batch1);
    r["speedup_vs_nonspec_same_batch_spread"] = ratio_spread(m, same_batch);
    r["speedup_vs_nonspec_batch1_spread"] = ratio_spread(m, batch1);
    r["phase_fraction"] = phase_fraction(m.stats);
    r["acceptance_rate"] = m.stats.acceptance_rate();
    r["tokens_per_round"] = m.stats.tokens_per_round();
    r["operators_per_round"] = m.operators_per_round;
    r["host_syncs_per_round"] = m.host_syncs_per_round;
    r["grouping_rate"] = exspec ? nlohmann::ordered_json(m.exspec_stats.grouping_rate()) : nullptr;
    r["latency_p50_s"] = m.latency_p50_s;
    r["latency_p99_s"] = m.latency_p99_s;
    r["peak_memory_bytes"] = m.peak_memory_bytes;
    r["peak_memory_source"] = m.peak_memory_source;
    r["tokens"] = m.tokens;
    r["seconds"] = m.seconds;
    r["run_seconds"] = m.run_seconds;
    r["rounds"] = m.stats.rounds;
    if (exspec) {
      r["window"] = m.exspec.window;
      r["max_wait_steps"] = m.exspec.max_wait_steps;
      r["longest_wait_steps"] = m.exspec_stats.longest_wait;
    }
    results.push_back(std::move(r));
  }
  return results;
}

std::string results_svg(const std::vector<Measurement>& measurements, const std::string& title) {
  std::vector<Engine> engines;
  std::set<int64_t> batch_set;
  for (const Measurement& m : measurements) {
    if (std::find(engines.begin(), engines.end(), m.engine) == engines.end()) engines.push_back(m.engine);
    batch_set.insert(m.batch_size);
  }
  const std::vector<int64_t> batch_sizes(batch_set.begin(), batch_set.end());
  std::string svg =
      "<svg xmlns='http://www.w3.org/2000/svg' width='800' height='330' font-family='sans-serif'>"
      "<rect width='800' height='330' fill='white'/>";
  svg += "<text x='400' y='18' text-anchor='middle' font-size='14'>" + escape_markup(title) + "</text>";
  svg += line_chart(measurements, engines, batch_sizes, [](const Measurement& m) { return m.tokens_per_s(); },
                    "generated tokens/s", 0);
  svg += line_chart(measurements, engines, batch_sizes, [](const Measurement& m) { return 100 * realign_share(m); },
                    "realign share of time (%)", 400);
  for (size_t e = 0; e < engines.size(); ++e) {
    const double x = 60 + 125 * static_cast<double>(e % 6);
    const std::string color = kColors[e % std::size(kColors)];
    svg += "<rect x='" + number(x) + "' y='306' width='12' height='12' fill='" + color + "'/>";
    svg += "<text x='" + number(x + 16) + "' y='316' font-size='11'>" + engine_name(engines[e]) + "</text>";
  }
  return svg + "</svg>\n";
}

}  // namespace specgate::cli
