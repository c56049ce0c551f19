#include "impl/reports/html_report.h"

#include <string>
#include <vector>

#include "impl/bench/question.h"
#include "impl/reports/markup.h"
#include "impl/reports/report_text.h"
#include "impl/reports/svg_charts.h"

namespace specgate {
namespace {

constexpr size_t kHistogramBins = 40;

constexpr const char* kStyle = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; background: #f5f6f8; color: #222; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; display: flex; align-items: center; gap: 12px; }
h2 { font-size: 17px; margin: 28px 0 10px; }
.badge { font-size: 14px; padding: 3px 12px; border-radius: 12px; color: #fff; }
.pass { background: #1a7f37; } .fail { background: #cf222e; }
.muted { color: #666; font-size: 13px; }
.reasons { background: #fff0f0; border-left: 4px solid #cf222e; padding: 8px 16px; margin: 16px 0; }
.reasons li { margin: 4px 0; }
.warning { background: #fff8c5; border-left: 4px solid #bf8700; padding: 8px 16px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 12px; margin-top: 16px; }
.card { background: #fff; border-radius: 8px; padding: 12px 14px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
.card .value { font-size: 24px; font-weight: 600; } .card .label { font-size: 12px; color: #666; }
.panel { background: #fff; border-radius: 8px; padding: 14px; box-shadow: 0 1px 2px rgba(0,0,0,.08); overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; background: #fff; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #e6e6e6; vertical-align: top; }
th { background: #f0f1f3; font-weight: 600; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 12px; }
.ctx { white-space: pre-wrap; word-break: break-all; }
.ctx .ref { background: #dafbe1; } .ctx .cand { background: #ffebe9; }
.tag { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; color: #fff; white-space: nowrap; }
.hard { background: #cf222e; } .near_tie { background: #bf8700; } .unattributed { background: #6e7781; }
.length { background: #0969da; } .missing { background: #8250df; }
)css";

const std::vector<ChartSeries>& attribution_series() {
  static const std::vector<ChartSeries> series = {
      {"hard", "#cf222e"}, {"near-tie", "#d4a72c"}, {"unattributed", "#8c959f"}, {"length", "#0969da"}};
  return series;
}

size_t series_of(Attribution attribution) {
  switch (attribution) {
    case Attribution::kHard: return 0;
    case Attribution::kNearTie: return 1;
    case Attribution::kUnattributed: return 2;
    case Attribution::kLength: return 3;
  }
  return 2;
}

std::string card(const std::string& value, const std::string& label) {
  return "<div class=\"card\"><div class=\"value\">" + escape_markup(value) + "</div><div class=\"label\">" +
         escape_markup(label) + "</div></div>";
}

std::string tag(const std::string& css_class, const std::string& text) {
  return "<span class=\"tag " + css_class + "\">" + escape_markup(text) + "</span>";
}

std::string unit_word(const ScoreReport& report) {
  const std::string unit = unit_summary(report.overall);
  if (unit == "token_ids") return "token";
  if (unit == "code_points") return "code point";
  return "token or code point";
}

void write_summary(const ScoreReport& report, std::ostream& out) {
  const GroupSummary& all = report.overall;
  out << "<div class=\"cards\">" << card(std::to_string(all.questions), "questions")
      << card(optional_percent(all.exact_match), "exact match (" + std::to_string(all.exact) + ")")
      << card(optional_percent(all.partial_match), "partial match (mean)")
      << card(std::to_string(all.divergences.hard), "hard divergences")
      << card(std::to_string(all.divergences.near_tie), "near-ties")
      << card(std::to_string(all.divergences.unattributed), "unattributed")
      << card(std::to_string(all.divergences.length), "length divergences")
      << card(std::to_string(report.missing_ids.size()) + " / " + std::to_string(report.unexpected_ids.size()),
              "missing / unexpected ids")
      << "</div>\n";
  if (const std::string eos = eos_summary(report); !eos.empty()) out << "<p class=\"muted\">" << escape_markup(eos) << "</p>\n";
  if (const std::string lengths = run_length_summary(report); !lengths.empty())
    out << "<p>" << escape_markup(lengths) << "</p>\n";
  if (const std::string near_tie = near_tie_summary(report); !near_tie.empty())
    out << "<p>" << escape_markup(near_tie) << "</p>\n";
  const CoverageText coverage = coverage_text(report.candidate_coverage);
  if (coverage.line) out << "<p>" << escape_markup(*coverage.line) << "</p>\n";
  if (coverage.warning) out << "<p class=\"warning\">WARNING: " << escape_markup(*coverage.warning) << "</p>\n";
  for (const std::string& line : stream_lines(report)) out << "<p>" << escape_markup(line) << "</p>\n";
}

void write_charts(const ScoreReport& report, std::ostream& out) {
  std::vector<BarGroup> groups;
  const auto add = [&groups](const std::string& name, const GroupSummary& group) {
    if (group.exact_match) groups.push_back({name, {*group.exact_match, *group.partial_match}});
  };
  for (const auto& [subtask, group] : report.by_subtask) add(subtask, group);
  add("all", report.overall);
  out << "<h2>Match per subtask</h2>\n<div class=\"panel\">"
      << percent_bars_svg({{"exact match", "#1a7f37"}, {"partial match", "#54aeff"}}, groups) << "</div>\n";

  std::vector<std::pair<int64_t, size_t>> positions;
  for (const ItemResult& item : report.items) {
    if (item.divergence) positions.emplace_back(item.divergence->where.index, series_of(item.divergence->attribution.kind));
  }
  out << "<h2>Where answers first diverge</h2>\n<div class=\"panel\">";
  if (positions.empty()) {
    out << "<p class=\"muted\">No answer diverges from its reference.</p>";
  } else {
    out << stacked_histogram_svg(attribution_series(),
                                 bin_positions(positions, attribution_series().size(), kHistogramBins),
                                 "position of the first divergence (" + unit_word(report) + " index, all turns)");
  }
  out << "</div>\n";
}

void write_group_table(const ScoreReport& report, std::ostream& out) {
  out << "<h2>Per subtask and category</h2>\n<div class=\"panel\"><table>\n<tr><th>subtask / category</th>"
         "<th class=\"num\">questions</th><th class=\"num\">exact match</th><th class=\"num\">partial match</th>"
         "<th class=\"num\">hard</th><th class=\"num\">near-tie</th><th class=\"num\">unattributed</th>"
         "<th class=\"num\">length</th><th class=\"num\">missing</th><th>unit</th></tr>\n";
  const auto row = [&out](const std::string& name, const GroupSummary& g, bool strong) {
    const std::string label = strong ? "<strong>" + escape_markup(name) + "</strong>" : "&nbsp;&nbsp;&nbsp;" + escape_markup(name);
    out << "<tr><td>" << label << "</td><td class=\"num\">" << g.questions << "</td><td class=\"num\">"
        << optional_percent(g.exact_match) << "</td><td class=\"num\">" << optional_percent(g.partial_match) << "</td><td class=\"num\">"
        << g.divergences.hard << "</td><td class=\"num\">" << g.divergences.near_tie << "</td><td class=\"num\">"
        << g.divergences.unattributed << "</td><td class=\"num\">" << g.divergences.length << "</td><td class=\"num\">"
        << g.missing << "</td><td>" << unit_summary(g) << "</td></tr>\n";
  };
  for (const auto& [subtask, group] : report.by_subtask) {
    row(subtask, group, true);
    for (const auto& [category, category_group] : report.by_category) {
      if (subtask_of(category) == subtask && category != subtask) row(category, category_group, false);
    }
  }
  row("all", report.overall, true);
  out << "</table></div>\n";
}

void write_speed_table(const ScoreReport& report, std::ostream& out) {
  if (!has_speed(report)) return;
  out << "<h2>Speed per subtask</h2>\n<div class=\"panel\"><table>\n<tr><th>subtask</th>"
         "<th class=\"num\">tokens per target pass</th><th class=\"num\">accepted/drafted</th>"
         "<th class=\"num\">reference tokens/s per request</th><th class=\"num\">candidate tokens/s per request</th>"
         "<th class=\"num\">speedup per request</th></tr>\n";
  const auto row = [&out](const std::string& label, const SpeedSummary& s) {
    out << "<tr><td>" << label << "</td><td class=\"num\">" << optional_figure(s.tokens_per_pass)
        << "</td><td class=\"num\">" << optional_percent(s.acceptance) << "</td><td class=\"num\">"
        << optional_figure(s.reference_tokens_per_second) << "</td><td class=\"num\">"
        << optional_figure(s.candidate_tokens_per_second) << "</td><td class=\"num\">" << optional_figure(s.speedup, "x")
        << "</td></tr>\n";
  };
  for (const auto& [subtask, group] : report.by_subtask) row(escape_markup(subtask), group.speed);
  row("<strong>all</strong>", report.overall.speed);
  out << "</table><p class=\"muted\">Per request: what one request sees, which a batch lowers as it grows (each "
         "request shares every pass with its batch); the run throughput below is what the system delivers. – where "
         "the answers do not carry what a figure needs (wall_time, new_tokens, decoding_steps, accept_lengths, "
         "drafted_tokens and accepted_drafts).</p>";
  if (const std::string line = run_throughput_line(report); !line.empty())
    out << "<p><strong>" << escape_markup(line) << "</strong></p>";
  out << "</div>\n";
}

// The same context as decoded text, when scoring had a tokenizer.
std::string decoded_context(const ItemDivergence& d) {
  if (!d.text) return "";
  const std::string before = escape_markup(visible_text(d.text->before));
  return "<div class=\"ctx\">ref&nbsp; " + before + "<span class=\"ref\">" + escape_markup(visible_text(d.text->reference_after)) +
         "</span><br>cand " + before + "<span class=\"cand\">" + escape_markup(visible_text(d.text->candidate_after)) +
         "</span></div>";
}

std::string context_cell(const ItemResult& item) {
  const ItemDivergence& d = *item.divergence;
  const Unit unit = *item.unit;
  const std::string separator = unit == Unit::kTokenIds ? " " : "";
  std::string before = symbols_label(unit, d.before);
  if (!before.empty()) before += separator;
  return "<div class=\"ctx mono\">ref&nbsp; " + escape_markup(before) + "<span class=\"ref\">" +
         escape_markup(symbols_label(unit, d.reference_after)) + "</span><br>cand " + escape_markup(before) +
         "<span class=\"cand\">" + escape_markup(symbols_label(unit, d.candidate_after)) + "</span></div>" +
         decoded_context(d);
}

void write_divergences(const ScoreReport& report, std::ostream& out) {
  out << "<h2>Diverging questions</h2>\n";
  bool any = false;
  for (const ItemResult& item : report.items) any = any || !item.comparison.exact;
  if (!any) {
    out << "<p class=\"muted\">Every question is answered exactly.</p>\n";
    return;
  }
  out << "<div class=\"panel\"><table>\n<tr><th class=\"num\">question</th><th>category</th><th class=\"num\">position</th>"
         "<th>reference → candidate</th><th>attribution</th><th class=\"num\">partial</th><th>context</th></tr>\n";
  for (const ItemResult& item : report.items) {
    if (item.comparison.exact) continue;
    out << "<tr><td class=\"num\">" << item.question_id << "</td><td>" << escape_markup(item.category) << "</td>";
    if (item.missing) {
      out << "<td class=\"num\">–</td><td>–</td><td>" << tag("missing", "missing")
          << "</td><td class=\"num\">0</td><td class=\"muted\">no answer in the candidate (reference line "
          << item.reference_line << ")</td></tr>\n";
      continue;
    }
    if (item.prompt_mismatch) {
      out << "<td class=\"num\">–</td><td>–</td><td>" << tag("missing", "prompt mismatch")
          << "</td><td class=\"num\">0</td><td class=\"muted\">" << escape_markup(prompt_mismatch_label(*item.prompt_mismatch))
          << "</td></tr>\n";
      continue;
    }
    const Divergence& d = item.divergence->where;
    const AttributionResult& a = item.divergence->attribution;
    std::string attribution = tag(std::string(attribution_name(a.kind)), std::string(attribution_name(a.kind)));
    if (a.margin) {
      attribution += " <span class=\"mono\">" + std::string(a.margin_is_lower_bound ? "≥ " : "") +
                     escape_markup(short_number(*a.margin)) + " nats</span><div class=\"muted\">" +
                     escape_markup(std::string(margin_source_name(*a.source))) + "</div>";
    }
    if (!a.note.empty()) attribution += "<div class=\"muted\">" + escape_markup(a.note) + "</div>";
    out << "<td class=\"num\">" << d.index << "<div class=\"muted\">turn " << d.turn << "</div></td><td class=\"mono\">"
        << escape_markup(symbol_label(*item.unit, d.reference_symbol)) << " → "
        << escape_markup(symbol_label(*item.unit, d.candidate_symbol)) << "</td><td>" << attribution
        << "</td><td class=\"num\">" << percent(item.comparison.partial) << "</td><td>" << context_cell(item)
        << "</td></tr>\n";
  }
  out << "</table></div>\n";
}

void write_id_problems(const ScoreReport& report, std::ostream& out) {
  if (report.missing_ids.empty() && report.unexpected_ids.empty()) return;
  out << "<h2>Question ids</h2>\n<div class=\"panel\"><table>\n";
  const auto ids = [](const std::vector<int64_t>& list) {
    std::string text;
    for (int64_t id : list) text += (text.empty() ? "" : ", ") + std::to_string(id);
    return text.empty() ? std::string("none") : text;
  };
  out << "<tr><th>missing from the candidate</th><td class=\"mono\">" << ids(report.missing_ids) << "</td></tr>\n";
  out << "<tr><th>not in the reference</th><td class=\"mono\">" << ids(report.unexpected_ids) << "</td></tr>\n";
  out << "</table></div>\n";
}

void write_inputs(const ScoreReport& report, std::ostream& out) {
  out << "<h2>Inputs and settings</h2>\n<div class=\"panel\"><table>\n";
  const auto file_row = [&out](const std::string& role, const InputFile& file, const std::string& counted) {
    out << "<tr><th>" << role << "</th><td class=\"mono\">" << escape_markup(file.path.string()) << "</td><td>"
        << file.records << " " << counted << ", " << file.bytes << " bytes</td><td class=\"mono\">sha256 "
        << file.sha256 << "</td></tr>\n";
  };
  file_row("reference", report.reference, "answers");
  file_row("candidate", report.candidate, "answers");
  if (report.bench) file_row("bench", *report.bench, "questions");
  const ScoreSettings& s = report.settings;
  out << "<tr><th>turns</th><td colspan=\"3\">"
      << (s.turns == TurnScope::kAll ? "all, in order (turn t against turn t)" : "first only") << "</td></tr>\n"
      << "<tr><th>unit</th><td colspan=\"3\">" << unit_summary(report.overall)
      << " (token ids where both answers have them, else Unicode code points)</td></tr>\n"
      << "<tr><th>near-tie threshold</th><td colspan=\"3\">" << short_number(s.near_tie_threshold) << " nats</td></tr>\n"
      << "<tr><th>re-scoring</th><td colspan=\"3\" class=\"mono\">"
      << (s.rescore_with       ? escape_markup(s.rescore_with->string() + " (" + s.rescore_dtype + ", " + s.rescore_device + ")")
          : s.rescore_endpoint ? escape_markup(*s.rescore_endpoint + " (" + s.rescore_api + ", top " + std::to_string(s.rescore_top_k) + ")")
                               : std::string("none"))
      << "</td></tr>\n<tr><th>gate</th><td colspan=\"3\">min exact " << short_number(s.gate.min_exact) << ", min partial "
      << short_number(s.gate.min_partial) << ", max hard divergences "
      << (s.gate.max_hard_divergences ? std::to_string(*s.gate.max_hard_divergences) : std::string("any"))
      << ", min tokens per pass " << optional_figure(s.gate.min_tokens_per_pass) << ", min speedup "
      << optional_figure(s.gate.min_speedup) << "; missing or unexpected ids fail it</td></tr>\n</table></div>\n";
}

}  // namespace

void write_html_report(const ScoreReport& report, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
      << escape_markup(verdict(report.gate)) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body><main>\n";
  out << "<h1>specgate score " << tag(report.gate.passed ? "pass" : "fail", report.gate.passed ? "PASSED" : "FAILED")
      << "</h1>\n<div class=\"muted\">" << escape_markup(report.candidate.path.filename().string()) << " against "
      << escape_markup(report.reference.path.filename().string()) << " · " << escape_markup(report.generated_at)
      << "</div>\n";
  if (!report.gate.reasons.empty()) {
    out << "<div class=\"reasons\"><strong>The gate failed:</strong><ul>";
    for (const std::string& reason : report.gate.reasons) out << "<li>" << escape_markup(reason) << "</li>";
    out << "</ul></div>\n";
  }
  write_summary(report, out);
  write_charts(report, out);
  write_group_table(report, out);
  write_speed_table(report, out);
  write_divergences(report, out);
  write_id_problems(report, out);
  write_inputs(report, out);
  out << "</main></body>\n</html>\n";
}

}  // namespace specgate
