#include "impl/reports/sampling_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "impl/common/counted.h"
#include "impl/reports/input_file_json.h"
#include "impl/reports/markup.h"
#include "impl/reports/report_text.h"

namespace specgate {
namespace {

using nlohmann::json;

json test_json(const DistributionTest& t) {
  json out = {{"n", t.n},
              {"effective_n", t.effective_n},
              {"distance", t.distance},
              {"distance_interval", {t.distance_low, t.distance_high}},
              {"p_value", t.p_value},
              {"detectable_distance", t.detectable_distance},
              {"alpha", t.alpha},
              {"rejected", t.rejected}};
  if (t.m > 0) out["m"] = t.m;
  return out;
}

json tokens_json(const std::vector<UnsupportedToken>& tokens) {
  json out = json::array();
  for (const UnsupportedToken& t : tokens)
    out.push_back({{"file", t.file}, {"line", t.line}, {"question_id", t.question_id}, {"turn", t.turn},
                   {"position", t.position}, {"token", t.token}});
  return out;
}

json permutation_json(const PermutationKsTest& t) {
  return {{"units", {t.first_units, t.second_units}},
          {"exact", t.exact},
          {"smallest_p_value", t.smallest_p_value},
          {"values", {t.first_values, t.second_values}},
          {"exchangeable_units", t.exchangeable_units},
          {"effective_units", {t.first_effective_units, t.second_effective_units}},
          {"distance", t.distance},
          {"permutations", t.permutations},
          {"p_value", t.p_value}};
}

json side_json(const SampledSide& side) {
  json files = json::array();
  for (const InputFile& f : side.files) files.push_back(input_file_json<nlohmann::json>(f, "answers"));
  return {{"files", files},
          {"answers", side.answers},
          {"tokens", side.tokens},
          {"outside_support", tokens_json(side.outside_support)},
          {"boundary", tokens_json(side.boundary)},
          {"beyond_top_k", tokens_json(side.beyond_top_k)},
          {"pit_histogram", side.histogram},
          {"pit_histogram_band", {side.band.low, side.band.high}},
          {"uniformity", test_json(side.uniformity)},
          {"chi_square",
           {{"statistic", side.chi_square.statistic},
            {"degrees_of_freedom", side.chi_square.degrees_of_freedom},
            {"p_value", side.chi_square.p_value}}}};
}

std::string verdict_word(const SamplingCheckReport& report) { return report.rejected ? "REJECTED" : "passed"; }

std::string warpers(const SamplingCheckReport& report) {
  return describe(report.sampling) + " (from the " + report.sampling_source + ")";
}

// "D = 0.012 [0.004, 0.020], p = 0.31 (Holm 0.62), guaranteed to detect d >= 0.031 at power 0.9"
std::string test_line(const SampledGroup& group) {
  const DistributionTest& t = group.test;
  return "D = " + short_number(t.distance, 3) + " [" + short_number(t.distance_low, 3) + ", " +
         short_number(t.distance_high, 3) + "]" +
         (group.rounding_allowance > 0.0 ? " less a rounding allowance of " + short_number(group.rounding_allowance, 3) : "") +
         ", p = " + short_number(group.p_value, 3) + " (Holm " +
         short_number(group.holm_p_value, 3) + "), guaranteed to detect d >= " + short_number(group.detectable_distance, 3) +
         " at power 0.9";
}

std::string tokens_line(const SampledGroup& group) {
  const DistributionTest& t = group.test;
  if (group.permutation)
    return std::to_string(group.permutation->first_units) + " vs " + std::to_string(group.permutation->second_units) +
           " answers (" + std::to_string(t.n) + " vs " + std::to_string(t.m) + " tokens)";
  return std::to_string(t.n) + " tokens";
}

std::string what_was_tested(const SamplingCheckReport& report) {
  if (report.test == "two-sample")
    return "two-sample Kolmogorov-Smirnov test: the answers' randomised PIT values against the baseline's, answers as "
           "units (a permutation test within each question), token-level p given as a description";
  return "one-sample Kolmogorov-Smirnov test: the answers' randomised PIT values against Uniform(0, 1)";
}

// "support margin 2 logits (bfloat16, assumed: the answers record no dtype; --engine-dtype)"
std::string margin_line(const SamplingCheckReport& report) {
  const SupportMargin& m = report.margin;
  const std::string from = m.source == "assumed" ? "assumed: the answers record no dtype; --engine-dtype sets it"
                           : m.source == "answers" ? "the answers' run.dtype"
                                                   : "from the flags";
  return "support margin " + short_number(m.logits) + " logits, " + short_number(m.mass) + " in top-p mass (engine " +
         m.engine_dtype + ", " + from + "; re-scorer " + m.rescorer_dtype + ")";
}

std::string boundary_rate_line(const SamplingCheckReport& report) {
  const BoundaryRateTest& t = *report.boundary_rate;
  return "support boundary against a correct " + report.margin.engine_dtype + " engine: " + std::to_string(t.observed) +
         " of " + std::to_string(t.tokens) + " tokens, " + short_number(t.expected, 3) + " expected (tolerance x" +
         short_number(t.tolerance) + "), exact p = " + short_number(t.p_value, 3) + " (Holm " +
         short_number(t.holm_p_value, 3) + ")";
}

bool outside_fails(const SamplingCheckReport& report) {
  return !report.answers.outside_support.empty() || (report.baseline && !report.baseline->outside_support.empty());
}

std::string rates_line(const SupportRateGroup& g) {
  const RateComparison& r = g.rates;
  return g.name + ": " + std::to_string(r.first_events) + " of " + std::to_string(r.first_trials) + " tokens vs " +
         std::to_string(r.second_events) + " of " + std::to_string(r.second_trials) + ", permutation p over answers = " +
         short_number(r.p_value, 3) + " (Holm " + short_number(g.holm_p_value, 3) + ")";
}

// The PIT histogram: 20 bars, the count every bar expects under a correct engine (dashed) and
// the simultaneous band all 20 stay in 95 times in 100.
std::string histogram_svg(const SampledSide& side) {
  int64_t total = 0, highest = 0;
  for (int64_t count : side.histogram) {
    total += count;
    highest = std::max(highest, count);
  }
  const double expected = static_cast<double>(total) / kUniformityBins;
  const double top = std::max<double>(static_cast<double>(highest), side.band.high) * 1.1;
  constexpr double kWidth = 520, kHeight = 200, kLeft = 48, kBottom = 24, kTop = 8;
  const double plot_w = kWidth - kLeft - 8, plot_h = kHeight - kBottom - kTop, bar = plot_w / kUniformityBins;
  const auto y = [&](double count) { return kTop + plot_h * (1.0 - count / top); };
  std::ostringstream svg;
  svg.precision(4);
  svg << std::fixed << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" font-size=\"11\">";
  svg << "<rect x=\"" << kLeft << "\" y=\"" << y(side.band.high) << "\" width=\"" << plot_w << "\" height=\""
      << y(side.band.low) - y(side.band.high) << "\" fill=\"#ddf4ff\"/>";
  for (int i = 0; i < kUniformityBins; ++i) {
    const double count = static_cast<double>(side.histogram[i]);
    svg << "<rect x=\"" << kLeft + i * bar + 1 << "\" y=\"" << y(count) << "\" width=\"" << bar - 2 << "\" height=\""
        << y(0) - y(count) << "\" fill=\"#0969da\"><title>[" << short_number(i / 20.0) << ", "
        << short_number((i + 1) / 20.0) << "): " << side.histogram[i] << "</title></rect>";
  }
  svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + plot_w << "\" y1=\"" << y(expected) << "\" y2=\"" << y(expected)
      << "\" stroke=\"#cf222e\" stroke-dasharray=\"5 3\"/>";
  svg << "<text x=\"" << kLeft - 4 << "\" y=\"" << y(top / 1.1) + 4 << "\" text-anchor=\"end\">" << std::lround(top / 1.1)
      << "</text><text x=\"" << kLeft - 4 << "\" y=\"" << y(0) + 4 << "\" text-anchor=\"end\">0</text>";
  for (double tick : {0.0, 0.5, 1.0})
    svg << "<text x=\"" << kLeft + tick * plot_w << "\" y=\"" << kHeight - 8 << "\" text-anchor=\"middle\">"
        << short_number(tick) << "</text>";
  svg << "</svg>";
  return svg.str();
}

void write_side_markdown(const char* title, const SampledSide& side, std::ostream& out) {
  out << "\n## " << title << "\n\n"
      << counted(side.answers, "answer") << ", " << counted(side.tokens, "token") << " from "
      << counted(static_cast<int64_t>(side.files.size()), "file") << "; "
      << side.outside_support.size() << " outside the support beyond the margin, " << side.boundary.size()
      << " on its boundary (left out of the PIT)"
      << (side.beyond_top_k.empty() ? std::string()
                                    : ", " + std::to_string(side.beyond_top_k.size()) +
                                          " whose PIT lies past the reference engine's top k (left out)")
      << ". Against Uniform(0, 1), token by token: D = "
      << short_number(side.uniformity.distance, 3) << ", p = " << short_number(side.uniformity.p_value, 3)
      << "; chi-square " << short_number(side.chi_square.statistic, 4) << " on " << side.chi_square.degrees_of_freedom
      << " degrees of freedom, p = " << short_number(side.chi_square.p_value, 3) << ".\n\n| PIT bin |";
  for (int i = 0; i < kUniformityBins; i += 2) out << " " << short_number(i / 20.0) << " |";
  out << "\n|---|";
  for (int i = 0; i < kUniformityBins; i += 2) out << "---:|";
  out << "\n| tokens |";
  for (int i = 0; i < kUniformityBins; i += 2) out << " " << side.histogram[i] + side.histogram[i + 1] << " |";
  out << "\n";
  for (const auto& [title, tokens] : {std::pair{"Outside the support", &side.outside_support},
                                       std::pair{"On the support's boundary", &side.boundary}}) {
    for (size_t i = 0; i < std::min<size_t>(tokens->size(), 10); ++i) {
      const UnsupportedToken& t = (*tokens)[i];
      out << (i == 0 ? std::string("\n") + title + ":\n\n" : "") << "- " << t.file << ":" << t.line << ", question "
          << t.question_id << ", turn " << t.turn << ", position " << t.position << ": token " << t.token << "\n";
    }
  }
}

}  // namespace

json sampling_report_json(const SamplingCheckReport& report) {
  json groups = json::array();
  for (const SampledGroup& g : report.groups) {
    json group = {{"name", g.name},
                  {"test", test_json(g.test)},
                  {"p_value", g.p_value},
                  {"detectable_distance", g.detectable_distance},
                  {"holm_p_value", g.holm_p_value},
                  {"rejected", g.rejected},
                  {"tested", g.tested}};
    if (g.permutation) group["permutation"] = permutation_json(*g.permutation);
    if (g.rounding_allowance > 0.0)
      group["rounding"] = {{"shift", g.rounding_shift}, {"allowance", g.rounding_allowance}};
    groups.push_back(std::move(group));
  }
  json rates = json::array();
  for (const SupportRateGroup& g : report.support_rates)
    rates.push_back({{"name", g.name},
                     {"events", {g.rates.first_events, g.rates.second_events}},
                     {"tokens", {g.rates.first_trials, g.rates.second_trials}},
                     {"p_value", g.rates.p_value},
                     {"holm_p_value", g.holm_p_value},
                     {"rejected", g.rejected}});
  json out = {{"schema_version", 2},
              {"tool", "specgate conformance sampling"},
              {"generated_at", report.generated_at},
              {"verdict", report.rejected ? "rejected" : "passed"},
              {"reasons", report.reasons},
              {"test", report.test},
              {"alpha", report.alpha},
              {"pit_seed", report.pit_seed},
              {"sampling",
               {{"temperature", report.sampling.temperature},
                {"top_k", report.sampling.top_k},
                {"top_p", report.sampling.top_p},
                {"min_p", report.sampling.min_p},
                {"warper_order", kWarperOrder},
                {"source", report.sampling_source}}},
              {"support_margin",
               {{"logits", report.margin.logits},
                {"mass", report.margin.mass},
                {"engine_dtype", report.margin.engine_dtype},
                {"rescorer_dtype", report.margin.rescorer_dtype},
                {"source", report.margin.source}}},
              {"family_size", report.family_size},
              {"groups", groups},
              {"support_rates", rates},
              {"answers", side_json(report.answers)}};
  if (report.baseline) out["baseline"] = side_json(*report.baseline);
  out["boundary_rate"] = nullptr;
  if (const std::optional<BoundaryRateTest>& t = report.boundary_rate)
    out["boundary_rate"] = {{"observed", t->observed},   {"tokens", t->tokens},
                            {"expected", t->expected},   {"tolerance", t->tolerance},
                            {"p_value", t->p_value},     {"holm_p_value", t->holm_p_value},
                            {"rejected", t->rejected}};
  return out;
}

void write_sampling_summary(const SamplingCheckReport& report, std::ostream& out) {
  out << "sampling: " << what_was_tested(report) << "; " << warpers(report) << ", alpha " << short_number(report.alpha)
      << " (Holm over " << report.family_size << "); " << margin_line(report) << "\n";
  for (const SampledGroup& g : report.groups)
    out << "  " << g.name << ": " << tokens_line(g) << ", " << test_line(g)
        << (g.tested ? "" : " (untested: its p-value cannot go below " + short_number(g.permutation->smallest_p_value, 3) + ")")
        << (g.rejected ? "  REJECTED" : "") << "\n";
  out << "  outside the support: " << report.answers.outside_support.size() << " of " << report.answers.tokens
      << " tokens, on its boundary: " << report.answers.boundary.size();
  if (report.baseline)
    out << " (baseline: " << report.baseline->outside_support.size() << " and " << report.baseline->boundary.size() << " of "
        << report.baseline->tokens << ")";
  // A token outside the support rejects on its own, whatever the PIT of the rest says.
  if (outside_fails(report)) out << "  REJECTED";
  out << "\n";
  const size_t beyond = report.answers.beyond_top_k.size() + (report.baseline ? report.baseline->beyond_top_k.size() : 0);
  if (beyond > 0)
    out << "  beyond the reference engine's top k (left out of the test): " << report.answers.beyond_top_k.size() << " of "
        << report.answers.tokens << " tokens"
        << (report.baseline ? " (baseline: " + std::to_string(report.baseline->beyond_top_k.size()) + ")" : std::string()) << "\n";
  for (const SupportRateGroup& g : report.support_rates) out << "  " << rates_line(g) << (g.rejected ? "  REJECTED" : "") << "\n";
  if (report.boundary_rate)
    out << "  " << boundary_rate_line(report) << (report.boundary_rate->rejected ? "  REJECTED" : "") << "\n";
  out << "verdict " << verdict_word(report) << (report.rejected ? ":" : "") << "\n";
  for (const std::string& reason : report.reasons) out << "  - " << reason << "\n";
}

void write_sampling_markdown(const SamplingCheckReport& report, std::ostream& out) {
  out << "# specgate sampling: " << verdict_word(report) << "\n\n"
      << what_was_tested(report) << ", at alpha " << short_number(report.alpha)
      << " with Holm's correction over the " << report.family_size << " hypotheses below; " << warpers(report) << "; "
      << margin_line(report) << ". \"Detectable\" is the distance a group is guaranteed to reject with probability 0.9 "
      << "at Holm's strictest step (alpha / " << report.family_size << "), a bound.\n";
  if (!report.reasons.empty()) {
    out << "\n";
    for (const std::string& reason : report.reasons) out << "- **" << reason << "**\n";
  }
  out << "\n| group | sample | D [interval] | p | Holm p | detectable d | verdict |\n|---|---:|---|---:|---:|---:|---|\n";
  for (const SampledGroup& g : report.groups) {
    const DistributionTest& t = g.test;
    out << "| " << g.name << " | " << tokens_line(g) << " | " << short_number(t.distance, 3) << " ["
        << short_number(t.distance_low, 3) << ", " << short_number(t.distance_high, 3) << "] | "
        << short_number(g.p_value, 3) << " | " << short_number(g.holm_p_value, 3) << " | "
        << short_number(g.detectable_distance, 3) << " | " << (g.rejected ? "rejected" : "passed") << " |\n";
  }
  for (const SupportRateGroup& g : report.support_rates) out << "\n- " << rates_line(g) << (g.rejected ? ": rejected" : "");
  if (report.boundary_rate)
    out << "\n- " << boundary_rate_line(report) << (report.boundary_rate->rejected ? ": rejected" : "");
  if (!report.support_rates.empty() || report.boundary_rate) out << "\n";
  write_side_markdown("Answers", report.answers, out);
  if (report.baseline) write_side_markdown("Baseline", *report.baseline, out);
}

void write_sampling_html(const SamplingCheckReport& report, std::ostream& out) {
  out << html_report_start("specgate sampling", verdict_word(report), !report.rejected) << "<p>"
      << escape_markup(what_was_tested(report)) << ", at alpha " << short_number(report.alpha)
      << " with Holm's correction over " << report.family_size << " hypotheses; " << escape_markup(warpers(report)) << "; "
      << escape_markup(margin_line(report)) << ".</p>\n";
  if (!report.reasons.empty()) {
    out << "<ul class=\"fail\">";
    for (const std::string& reason : report.reasons) out << "<li>" << escape_markup(reason) << "</li>";
    out << "</ul>\n";
  }
  out << "<table><tr><th>group</th><th>sample</th><th>D</th><th>interval</th><th>p</th><th>Holm p</th>"
      << "<th>guaranteed detectable d</th><th>verdict</th></tr>\n";
  for (const SampledGroup& g : report.groups) {
    const DistributionTest& t = g.test;
    out << "<tr><td>" << escape_markup(g.name) << "</td><td>" << tokens_line(g) << "</td><td>"
        << short_number(t.distance, 3) << "</td><td>[" << short_number(t.distance_low, 3) << ", "
        << short_number(t.distance_high, 3) << "]</td><td>" << short_number(g.p_value, 3) << "</td><td>"
        << short_number(g.holm_p_value, 3) << "</td><td>" << short_number(g.detectable_distance, 3) << "</td><td class=\""
        << (g.rejected ? "fail\">rejected" : "pass\">passed") << "</td></tr>\n";
  }
  out << "</table>\n";
  for (const SupportRateGroup& g : report.support_rates)
    out << "<p class=\"" << (g.rejected ? "fail" : "muted") << "\">" << escape_markup(rates_line(g)) << "</p>\n";
  if (report.boundary_rate)
    out << "<p class=\"" << (report.boundary_rate->rejected ? "fail" : "muted") << "\">"
        << escape_markup(boundary_rate_line(report)) << "</p>\n";
  const auto side = [&](const char* title, const SampledSide& s) {
    out << "<h2>" << title << "</h2>\n<p class=\"muted\">" << s.answers << " answers, " << s.tokens << " tokens, "
        << s.outside_support.size() << " outside the support, " << s.boundary.size() << " on its boundary. PIT values "
        << "in 20 bins; dashed: the count each bin expects from a correct engine; shaded: the band all 20 bins of a "
        << "correct engine stay in 95 times in 100 (a bin outside it at alpha " << short_number(report.alpha) << ").</p>\n"
        << histogram_svg(s) << "\n";
  };
  side("Answers", report.answers);
  if (report.baseline) side("Baseline", *report.baseline);
  out << "</body></html>\n";
}

void write_sampling_junit(const SamplingCheckReport& report, std::ostream& out) {
  const bool outside = outside_fails(report);
  const bool boundary = report.boundary_rate && report.boundary_rate->rejected;
  int64_t failures = (outside ? 1 : 0) + (boundary ? 1 : 0);
  for (const SampledGroup& g : report.groups) failures += g.rejected ? 1 : 0;
  for (const SupportRateGroup& g : report.support_rates) failures += g.rejected ? 1 : 0;
  const size_t tests = report.groups.size() + report.support_rates.size() + 1 + (report.boundary_rate ? 1 : 0);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"specgate sampling\" tests=\"" << tests
      << "\" failures=\"" << failures << "\">\n<testsuite name=\"specgate.sampling\" tests=\"" << tests << "\" failures=\""
      << failures << "\">\n";
  for (const SampledGroup& g : report.groups) {
    out << "<testcase classname=\"specgate.sampling." << escape_markup(report.test) << "\" name=\"" << escape_markup(g.name)
        << "\">";
    if (g.rejected)
      out << "<failure type=\"distribution\" message=\"" << escape_markup(tokens_line(g) + ", " + test_line(g)) << "\"/>";
    out << "</testcase>\n";
  }
  for (const SupportRateGroup& g : report.support_rates) {
    out << "<testcase classname=\"specgate.sampling.support\" name=\"" << escape_markup(g.name) << " rate\">";
    if (g.rejected) out << "<failure type=\"support_rate\" message=\"" << escape_markup(rates_line(g)) << "\"/>";
    out << "</testcase>\n";
  }
  if (report.boundary_rate) {
    out << "<testcase classname=\"specgate.sampling.support\" name=\"support boundary against the engine's dtype\">";
    if (boundary) out << "<failure type=\"boundary_rate\" message=\"" << escape_markup(boundary_rate_line(report)) << "\"/>";
    out << "</testcase>\n";
  }
  out << "<testcase classname=\"specgate.sampling.support\" name=\"tokens inside the support\">";
  if (outside) {
    const SampledSide& side = report.answers.outside_support.empty() ? *report.baseline : report.answers;
    const UnsupportedToken& t = side.outside_support.front();
    out << "<failure type=\"outside_support\" message=\""
        << escape_markup(counted(static_cast<int64_t>(side.outside_support.size()), "token") +
                         " outside the support beyond the margin, first at " + t.file + ":" + std::to_string(t.line))
        << "\"/>";
  }
  out << "</testcase>\n";
  out << "</testsuite>\n</testsuites>\n";
}

}  // namespace specgate
