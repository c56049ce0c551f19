#include "conformance/bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
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

// A figure's least and greatest value over the repeats.
struct Spread {
  double min = INFINITY, max = -INFINITY;
  void add(double value) {
    min = std::min(min, value);
    max = std::max(max, value);
  }
};

// The ratio's least and greatest value over the repeats, each repeat's run against the
// baseline's run of the same round-robin pass.
std::optional<Spread> ratio_spread(const Measurement& m, const Measurement* baseline) {
  if (baseline == nullptr || baseline->tokens <= 0) return std::nullopt;
  const size_t repeats = std::min(m.run_seconds.size(), baseline->run_seconds.size());
  if (repeats == 0) return std::nullopt;
  Spread spread;
  for (size_t r = 0; r < repeats; ++r) {
    if (m.run_seconds[r] <= 0 || baseline->run_seconds[r] <= 0) return std::nullopt;
    spread.add((m.tokens / m.run_seconds[r]) / (baseline->tokens / baseline->run_seconds[r]));
  }
  return spread;
}

nlohmann::ordered_json spread_json(const std::optional<Spread>& spread) {
  if (!spread) return nullptr;
  return {{"min", spread->min}, {"max", spread->max}};
}

Spread throughput_spread(const Measurement& m) {
  Spread spread;
  for (double seconds : m.run_seconds) spread.add(seconds > 0 ? m.tokens / seconds : 0.0);
  return spread;
}

double realign_share(const Measurement& m) {
  const DecodeStats& s = m.stats;
  const double total = s.draft_seconds + s.verify_seconds + s.realign_seconds + s.other_seconds;
  return total > 0 ? s.realign_seconds / total : 0.0;
}

nlohmann::ordered_json phase_seconds(const DecodeStats& s) {
  return {{"draft", s.draft_seconds}, {"verify", s.verify_seconds}, {"realign", s.realign_seconds}, {"other", s.other_seconds}};
}

nlohmann::ordered_json phase_fraction(const DecodeStats& s) {
  const double total = s.draft_seconds + s.verify_seconds + s.realign_seconds + s.other_seconds;
  const auto share = [total](double seconds) { return total > 0 ? seconds / total : 0.0; };
  return {{"draft", share(s.draft_seconds)},
          {"verify", share(s.verify_seconds)},
          {"realign", share(s.realign_seconds)},
          {"other", share(s.other_seconds)}};
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string number(double value) { return fixed(value, 1); }

// "150", "0.5": 15 significant digits drop the rounding error of i * step and the zeros after it.
std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return "<line x1='" + number(x1) + "' y1='" + number(y1) + "' x2='" + number(x2) + "' y2='" + number(y2) + "' " +
         attributes + "/>";
}

std::string text(double x, double y, const std::string& attributes, const std::string& content) {
  return "<text x='" + number(x) + "' y='" + number(y) + "' " + attributes + ">" + escape_markup(content) + "</text>";
}

constexpr const char* kColors[] = {"#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377"};

// A measurement as one chart shows it: its value, and the value's least and greatest over the
// repeats where the chart knows them.
struct Point {
  double value = 0.0;
  std::optional<Spread> spread;
};

struct Chart {
  std::string label;
  std::string unit;  // after a value in the hover text, printed with `decimals`
  int decimals = 1;
  std::function<std::optional<Point>(const Measurement&)> point;  // nullopt: not on this chart
  std::optional<double> reference;                                // a dashed line across the plot
};

// One chart with its origin at (0, 0): x is the batch sizes' order (log2 of powers of two), y
// from 0 to nice ticks; per engine a polyline through circles that give their value as hover
// text, with a whisker from the least to the greatest repeat where there are several.
std::string line_chart(const std::vector<Measurement>& measurements, const std::vector<Engine>& engines,
                       const std::vector<int64_t>& batch_sizes, const Chart& chart) {
  constexpr double kLeft = 60, kTop = 50, kWidth = 320, kHeight = 200, kInset = 15;
  double top = chart.reference.value_or(0.0);
  for (const Measurement& m : measurements) {
    if (const std::optional<Point> p = chart.point(m)) {
      top = std::max({top, p->value, p->spread ? p->spread->max : 0.0});
    }
  }
  const std::vector<double> ticks = nice_ticks(top);
  const double steps = std::max<double>(1, static_cast<double>(batch_sizes.size() - 1));
  auto x_of = [&](int64_t batch) {
    const auto at = std::find(batch_sizes.begin(), batch_sizes.end(), batch) - batch_sizes.begin();
    return kLeft + kInset + (kWidth - 2 * kInset) * static_cast<double>(at) / steps;
  };
  auto y_of = [&](double v) { return kTop + kHeight * (1 - v / ticks.back()); };

  std::string svg;
  for (double tick : ticks) {
    svg += line(kLeft, y_of(tick), kLeft + kWidth, y_of(tick), "stroke='#ddd'");
    svg += text(kLeft - 6, y_of(tick) + 4, "text-anchor='end' font-size='10'", tick_label(tick));
  }
  svg += line(kLeft, kTop + kHeight, kLeft + kWidth, kTop + kHeight, "stroke='#333'");
  svg += line(kLeft, kTop, kLeft, kTop + kHeight, "stroke='#333'");
  if (chart.reference) {
    const double y = y_of(*chart.reference);
    svg += line(kLeft, y, kLeft + kWidth, y, "stroke='#333' stroke-dasharray='6,4'");
  }
  for (int64_t batch : batch_sizes) {
    svg += text(x_of(batch), kTop + kHeight + 14, "text-anchor='middle' font-size='10'", std::to_string(batch));
  }
  svg += text(kLeft + kWidth / 2, kTop + kHeight + 30, "text-anchor='middle' font-size='11'", "batch size");
  svg += text(kLeft, kTop - 12, "font-size='12' font-weight='bold'", chart.label);
  for (size_t e = 0; e < engines.size(); ++e) {
    const std::string color = kColors[e % std::size(kColors)];
    // Each engine a little aside so that whiskers at one batch size do not hide one another.
    const double dodge = 4 * (static_cast<double>(e) - static_cast<double>(engines.size() - 1) / 2);
    std::string points, markers;
    for (int64_t batch : batch_sizes) {
      const Measurement* m = find(measurements, engines[e], batch);
      const std::optional<Point> p = m ? chart.point(*m) : std::nullopt;
      if (!p) continue;
      const double x = x_of(batch) + dodge, y = y_of(p->value);
      points += number(x) + "," + number(y) + " ";
      std::string hover = engine_name(engines[e]) + ", batch size " + std::to_string(batch) + ": " +
                          fixed(p->value, chart.decimals) + chart.unit;
      if (p->spread && m->run_seconds.size() > 1) {
        markers += line(x, y_of(p->spread->min), x, y_of(p->spread->max),
                        "class='spread' stroke='" + color + "' stroke-width='1.5'");
        hover += " (" + fixed(p->spread->min, chart.decimals) + "-" + fixed(p->spread->max, chart.decimals) +
                 " over " + std::to_string(m->run_seconds.size()) + " repeats)";
      }
      markers += "<circle cx='" + number(x) + "' cy='" + number(y) + "' r='3' fill='" + color + "'><title>" +
                 escape_markup(hover) + "</title></circle>";
    }
    svg += "<polyline fill='none' stroke='" + color + "' stroke-width='2' points='" + points + "'/>" + markers;
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
    r["speedup_vs_nonspec_same_batch_spread"] = spread_json(ratio_spread(m, same_batch));
    r["speedup_vs_nonspec_batch1_spread"] = spread_json(ratio_spread(m, batch1));
    r["phase_fraction"] = phase_fraction(m.stats);
    r["phase_seconds"] = phase_seconds(m.stats);
    r["acceptance_rate"] = m.stats.acceptance_rate();
    r["tokens_per_round"] = m.stats.tokens_per_round();
    r["draft_length"] = m.stats.draft_length();
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

std::vector<double> nice_ticks(double top) {
  constexpr double kMostIntervals = 5;
  if (!(top > 0)) top = 1;
  const double power = std::pow(10.0, std::floor(std::log10(top / kMostIntervals)));
  double step = 10 * power;
  for (double factor : {1.0, 2.0, 5.0}) {
    if (kMostIntervals * factor * power >= top) {
      step = factor * power;
      break;
    }
  }
  // A top a rounding error above a tick ends at that tick.
  const auto intervals = static_cast<int>(std::ceil(top / step * (1 - 1e-12)));
  std::vector<double> ticks;
  for (int i = 0; i <= intervals; ++i) ticks.push_back(i * step);
  return ticks;
}

std::string results_svg(const std::vector<Measurement>& measurements, const std::string& title) {
  std::vector<Engine> engines;
  std::set<int64_t> batch_set;
  size_t repeats = 0;
  for (const Measurement& m : measurements) {
    if (std::find(engines.begin(), engines.end(), m.engine) == engines.end()) engines.push_back(m.engine);
    batch_set.insert(m.batch_size);
    repeats = std::max(repeats, m.run_seconds.size());
  }
  const std::vector<int64_t> batch_sizes(batch_set.begin(), batch_set.end());
  const Chart charts[] = {
      {"generated tokens/s", " tokens/s", 1,
       [](const Measurement& m) { return Point{m.tokens_per_s(), throughput_spread(m)}; }},
      {"speedup vs nonspec-batch, same batch size", "x", 2,
       [&](const Measurement& m) -> std::optional<Point> {
         const Measurement* same_batch = find(measurements, Engine::kNonspecBatch, m.batch_size);
         const std::optional<Spread> spread = ratio_spread(m, same_batch);
         if (m.engine == Engine::kNonspecBatch || !spread) return std::nullopt;
         return Point{m.tokens_per_s() / same_batch->tokens_per_s(), spread};
       },
       1.0},
      {"realign share of time (%)", "%", 1, [](const Measurement& m) { return Point{100 * realign_share(m)}; }}};
  constexpr size_t kChartWidth = 400;
  const size_t width = kChartWidth * std::size(charts);
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(width) +
                    "' height='340' font-family='sans-serif'><rect width='" + std::to_string(width) +
                    "' height='340' fill='white'/>";
  svg += text(width / 2.0, 18, "text-anchor='middle' font-size='14'", title);
  for (size_t c = 0; c < std::size(charts); ++c) {
    svg += "<g transform='translate(" + std::to_string(kChartWidth * c) + ",0)'>" +
           line_chart(measurements, engines, batch_sizes, charts[c]) + "</g>";
  }
  double x = 60;
  for (size_t e = 0; e < engines.size(); ++e, x += 125) {
    const std::string color = kColors[e % std::size(kColors)];
    svg += "<rect x='" + number(x) + "' y='316' width='12' height='12' fill='" + color + "'/>";
    svg += text(x + 16, 326, "font-size='11'", engine_name(engines[e]));
  }
  std::string note = "dashed: nonspec-batch";
  if (repeats > 1) note += "; whiskers: range of " + std::to_string(repeats) + " repeats";
  svg += text(x, 326, "font-size='11' fill='#555'", note);
  return svg + "</svg>\n";
}


namespace {

std::string formatted(const char* format, double value) {
  char text[48];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// A speedup and, after it, its least and greatest value over the repeats.
std::string speedup_cell(const nlohmann::ordered_json& value, const nlohmann::ordered_json& spread) {
  if (value.is_null()) return "-";
  const std::string median = formatted("%.2f", value.get<double>());
  if (spread.is_null()) return median;
  return median + " [" + formatted("%.2f", spread["min"].get<double>()) + "-" + formatted("%.2f", spread["max"].get<double>()) + "]";
}

}  // namespace

std::vector<std::string> table_header() {
  return {"engine", "batch",  "tok/s",  "x same [min-max]", "x B=1 [min-max]", "draft", "verify", "realign",
          "other",  "accepted/drafted", "tok/rd", "ops/rd",           "sync/rd",         "group", "p50 s",  "p99 s"};
}

std::vector<std::vector<std::string>> table_rows(const std::vector<Measurement>& measurements) {
  std::vector<std::vector<std::string>> rows;
  for (const nlohmann::ordered_json& r : results_json(measurements)) {
    const nlohmann::ordered_json& phase = r["phase_fraction"];
    const auto share = [&phase](const char* name) { return formatted("%.1f%%", 100 * phase[name].get<double>()); };
    rows.push_back({r["engine"].get<std::string>(), std::to_string(r["batch_size"].get<int64_t>()),
                    formatted("%.1f", r["tokens_per_s"].get<double>()),
                    speedup_cell(r["speedup_vs_nonspec_same_batch"], r["speedup_vs_nonspec_same_batch_spread"]),
                    speedup_cell(r["speedup_vs_nonspec_batch1"], r["speedup_vs_nonspec_batch1_spread"]), share("draft"),
                    share("verify"), share("realign"), share("other"), formatted("%.1f%%", 100 * r["acceptance_rate"].get<double>()),
                    formatted("%.2f", r["tokens_per_round"].get<double>()),
                    formatted("%.1f", r["operators_per_round"].get<double>()),
                    formatted("%.2f", r["host_syncs_per_round"].get<double>()),
                    r["grouping_rate"].is_null() ? "-" : formatted("%.3f", r["grouping_rate"].get<double>()),
                    formatted("%.3f", r["latency_p50_s"].get<double>()), formatted("%.3f", r["latency_p99_s"].get<double>())});
  }
  return rows;
}

std::string results_markdown(const std::vector<Measurement>& measurements, const std::string& title,
                             const std::vector<std::pair<std::string, std::string>>& settings) {
  std::string out = "# " + title + "\n\n";
  for (size_t i = 0; i < settings.size(); ++i)
    out += (i == 0 ? "" : " · ") + settings[i].first + ": " + settings[i].second;
  if (!settings.empty()) out += "\n\n";
  const auto line = [&out](const std::vector<std::string>& cells) {
    for (const std::string& cell : cells) out += "| " + cell + " ";
    out += "|\n";
  };
  const std::vector<std::string> header = table_header();
  line(header);
  std::vector<std::string> rule(header.size(), "--:");
  rule[0] = "---";
  line(rule);
  for (const std::vector<std::string>& row : table_rows(measurements)) line(row);
  out += "\n`x same`: tokens/s over nonspec-batch's at the same batch size; `x B=1`: over nonspec-batch's at batch 1, "
         "both measured in the same run, the median of the repeats and [the least-the greatest]. Phases are shares of "
         "decoding time; `accepted/drafted`: accepted of drafted tokens; `ops/rd`, `sync/rd`: ATen operators and host "
         "syncs a round dispatches; `group`: EXSPEC's grouping rate.";
  if (std::any_of(measurements.begin(), measurements.end(), [](const Measurement& m) { return m.engine == Engine::kTree; }))
    out += " `tree`: EQSPEC drafting and verifying a token tree a row a round, its nodes the drafts.";
  return out + "\n";
}

}  // namespace specgate::cli
