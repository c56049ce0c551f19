#include "impl/reports/markdown_report.h"

#include <string>
#include <string_view>

#include "impl/reports/report_text.h"

namespace specgate {
namespace {

constexpr size_t kDivergenceRows = 50;

// Text that stays literal inside a table cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '|': out += "\\|"; break;
      case '\\': case '`': case '*': case '_': case '[': case ']': case '#': case '~':
        out += '\\';
        out += c;
        break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\n': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

// The decoded text around a divergence: the common text, then each side's from there.
std::string decoded_cell(const std::optional<ItemDivergence::Text>& text) {
  if (!text) return "";
  const std::string before = cell(visible_text(text->before));
  return "ref: " + before + "**" + cell(visible_text(text->reference_after)) + "**<br>cand: " + before + "**" +
         cell(visible_text(text->candidate_after)) + "**";
}

void group_row(std::ostream& out, const std::string& name, const GroupSummary& g) {
  out << "| " << name << " | " << g.questions << " | " << optional_percent(g.exact_match) << " | " << optional_percent(g.partial_match)
      << " | " << g.divergences.hard << " | " << g.divergences.near_tie << " | " << g.divergences.unattributed << " | "
      << g.divergences.length << " | " << g.missing << " |\n";
}

void speed_row(std::ostream& out, const std::string& name, const SpeedSummary& s) {
  out << "| " << name << " | " << optional_figure(s.tokens_per_pass) << " | "
      << optional_percent(s.acceptance) << " | " << optional_figure(s.reference_tokens_per_second)
      << " | " << optional_figure(s.candidate_tokens_per_second) << " | " << optional_figure(s.speedup, "x") << " |\n";
}

std::string gate_settings(const GateSettings& gate) {
  std::string text = "min exact " + short_number(gate.min_exact) + ", min partial " + short_number(gate.min_partial) +
                     ", max hard divergences " +
                     (gate.max_hard_divergences ? std::to_string(*gate.max_hard_divergences) : "any");
  if (gate.min_tokens_per_pass) text += ", min tokens per pass " + short_number(*gate.min_tokens_per_pass);
  if (gate.min_speedup) text += ", min speedup " + short_number(*gate.min_speedup);
  return text;
}

}  // namespace

void write_markdown_report(const ScoreReport& report, std::ostream& out) {
  const GroupSummary& all = report.overall;
  out << "## " << (report.gate.passed ? "✅ " : "❌ ") << verdict(report.gate) << "\n\n";
  out << "**" << all.questions << "** questions · exact match **" << optional_percent(all.exact_match) << "** · partial match **"
      << optional_percent(all.partial_match) << "** · unit `" << unit_summary(all) << "` · divergences: " << all.divergences.hard
      << " hard, " << all.divergences.near_tie << " near-tie, " << all.divergences.unattributed << " unattributed, "
      << all.divergences.length << " length\n\n";
  if (const std::string eos = eos_summary(report); !eos.empty()) out << cell(eos) << "\n\n";
  if (const std::string lengths = run_length_summary(report); !lengths.empty()) out << cell(lengths) << "\n\n";
  if (const std::string near_tie = near_tie_summary(report); !near_tie.empty()) out << cell(near_tie) << "\n\n";
  const CoverageText coverage = coverage_text(report.candidate_coverage);
  if (coverage.line) out << cell(*coverage.line) << "\n\n";
  if (coverage.warning) out << cell("WARNING: " + *coverage.warning) << "\n\n";
  for (const std::string& line : stream_lines(report)) out << cell(line) << "\n\n";

  out << "| subtask | questions | exact match | partial match | hard | near-tie | unattributed | length | missing |\n";
  out << "|---|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& [subtask, group] : report.by_subtask) group_row(out, cell(subtask), group);
  group_row(out, "**all**", all);

  if (has_speed(report)) {
    out << "\n| subtask | tokens per pass | accepted/drafted | reference tokens/s per request | candidate tokens/s per "
           "request | speedup per request |\n";
    out << "|---|--:|--:|--:|--:|--:|\n";
    for (const auto& [subtask, group] : report.by_subtask) speed_row(out, cell(subtask), group.speed);
    speed_row(out, "**all**", all.speed);
  }
  if (const std::string line = run_throughput_line(report); !line.empty()) out << "\n" << cell(line) << "\n";

  out << "\n**Gate** (" << gate_settings(report.settings.gate) << "): " << (report.gate.passed ? "passed" : "failed")
      << "\n";
  for (const std::string& reason : report.gate.reasons) out << "- " << cell(reason) << "\n";

  size_t diverging = 0;
  for (const ItemResult& item : report.items) diverging += item.comparison.exact ? 0 : 1;
  if (diverging > 0) {
    out << "\n<details><summary>First divergences (" << diverging << " questions)</summary>\n\n";
    bool decoded = false;
    for (const ItemResult& item : report.items) decoded = decoded || (item.divergence && item.divergence->text);
    out << "| question | category | position | reference | candidate | attribution |" << (decoded ? " text |" : "")
        << "\n|--:|---|--:|---|---|---|" << (decoded ? "---|" : "") << "\n";
    size_t shown = 0;
    for (const ItemResult& item : report.items) {
      if (item.comparison.exact || shown == kDivergenceRows) continue;
      ++shown;
      out << "| " << item.question_id << " | " << cell(item.category) << " | ";
      if (item.missing) {
        out << "– | – | – | missing from the candidate |" << (decoded ? " |" : "") << "\n";
        continue;
      }
      if (item.prompt_mismatch) {
        out << "– | – | – | " << cell(prompt_mismatch_label(*item.prompt_mismatch)) << " |" << (decoded ? " |" : "") << "\n";
        continue;
      }
      const Divergence& d = item.divergence->where;
      out << d.index << " (turn " << d.turn << ") | " << cell(symbol_label(*item.unit, d.reference_symbol)) << " | "
          << cell(symbol_label(*item.unit, d.candidate_symbol)) << " | "
          << cell(attribution_label(item.divergence->attribution)) << " |";
      if (decoded) out << " " << decoded_cell(item.divergence->text) << " |";
      out << "\n";
    }
    if (diverging > shown) out << "\n… and " << diverging - shown << " more in the JSON or HTML report.\n";
    out << "\n</details>\n";
  }
  out << "\nreference `" << report.reference.path.string() << "` (" << report.reference.records << " answers, sha256 "
      << report.reference.sha256.substr(0, 12) << "…) · candidate `" << report.candidate.path.string() << "` ("
      << report.candidate.records << " answers, sha256 " << report.candidate.sha256.substr(0, 12) << "…)\n";
}

}  // namespace specgate
