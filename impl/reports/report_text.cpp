#include "impl/reports/report_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "impl/common/counted.h"
#include "impl/common/utf8.h"

namespace specgate {
namespace {

void append_visible(int64_t code_point, std::string& out) {
  switch (code_point) {
    case '\n': out += "\\n"; return;
    case '\t': out += "\\t"; return;
    case '\r': out += "\\r"; return;
    default: break;
  }
  if (code_point < 0x20 || code_point == 0x7F) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", static_cast<unsigned>(code_point));
    out += escaped;
    return;
  }
  append_utf8(code_point, out);
}

}  // namespace

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

std::string optional_figure(const std::optional<double>& value, const std::string& suffix, int digits) {
  return value ? short_number(*value, digits) + suffix : "–";
}

std::string optional_percent(const std::optional<double>& fraction) { return fraction ? percent(*fraction) : "–"; }

bool has_speed(const ScoreReport& report) {
  if (report.overall.speed.any()) return true;
  for (const auto& [name, group] : report.by_subtask) {
    if (group.speed.any()) return true;
  }
  return false;
}

std::string symbol_label(Unit unit, const std::optional<int64_t>& symbol) {
  if (!symbol) return "(end)";
  if (unit == Unit::kTokenIds) return std::to_string(*symbol);
  std::string text = "'";
  append_visible(*symbol, text);
  return text + "'";
}

std::string symbols_label(Unit unit, const std::vector<int64_t>& symbols) {
  std::string text;
  for (int64_t symbol : symbols) {
    if (unit == Unit::kTokenIds) {
      if (!text.empty()) text += ' ';
      text += std::to_string(symbol);
    } else {
      append_visible(symbol, text);
    }
  }
  return text;
}

std::string visible_text(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    std::vector<int64_t> code_points;
    const std::optional<size_t> bad = decode_utf8(text, code_points);
    for (int64_t code_point : code_points) append_visible(code_point, out);
    if (!bad) break;
    append_utf8(0xFFFD, out);
    text.remove_prefix(*bad + 1);
  }
  return out;
}

std::string eos_summary(const ScoreReport& report) {
  const std::vector<int64_t>& ids = report.settings.eos_ids;
  if (ids.empty()) return "";
  std::string list;
  for (int64_t id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
  return "answers ending with an EOS id (" + list + "): reference " + std::to_string(report.reference_ended_with_eos) +
         ", candidate " + std::to_string(report.candidate_ended_with_eos);
}

std::string run_length_summary(const ScoreReport& report) {
  if (!report.run_length_mismatch) return "";
  const RunLengthMismatch& m = *report.run_length_mismatch;
  return "run lengths differ: " + counted(m.answers, "answer") + " ran with max_new_tokens " +
         std::to_string(m.reference_max_new_tokens) + " in the reference and " + std::to_string(m.candidate_max_new_tokens) +
         " in the candidate" + (m.other_pairs ? " (the first of them; others differ otherwise)" : "") +
         ": each turn compared up to the smaller, not counted as length divergences";
}

CoverageText coverage_text(const Coverage& coverage) {
  CoverageText text{.warning = coverage_warning(coverage)};
  if (coverage.reporting > 0 || coverage.rounds > 0 || coverage.drafted || text.warning) text.line = coverage_line(coverage);
  return text;
}

std::vector<std::string> stream_lines(const ScoreReport& report) {
  std::vector<std::string> lines;
  if (report.reference_streams.any()) lines.push_back("stream (reference): " + stream_timing_line(report.reference_streams));
  if (report.candidate_streams.any()) lines.push_back("stream (candidate): " + stream_timing_line(report.candidate_streams));
  return lines;
}

std::string near_tie_summary(const ScoreReport& report) {
  const double base = report.settings.near_tie_threshold;
  double widest = base;
  int64_t widened = 0;
  for (const ItemResult& item : report.items) {
    if (!item.divergence || !item.divergence->near_tie_threshold || *item.divergence->near_tie_threshold <= base) continue;
    widest = std::max(widest, *item.divergence->near_tie_threshold);
    ++widened;
  }
  if (widened == 0) return "";
  return "near-tie threshold " + short_number(base) + " nats, widened to " + short_number(widest) + " for " +
         counted(widened, "divergence") + " between answers computed in a lower precision (their run.dtype; " +
         "--near-tie-threshold fixes it)";
}

std::string attribution_label(const AttributionResult& attribution) {
  switch (attribution.kind) {
    case Attribution::kHard:
    case Attribution::kNearTie: {
      const std::string kind = attribution.kind == Attribution::kHard ? "hard" : "near-tie";
      return kind + ", margin " + (attribution.margin_is_lower_bound ? ">= " : "") + short_number(*attribution.margin) +
             " nats (" + std::string(margin_source_name(*attribution.source)) + ")";
    }
    case Attribution::kLength: return "length: " + attribution.note;
    case Attribution::kUnattributed: return "unattributed: " + attribution.note;
  }
  return "?";
}

std::string run_throughput_line(const ScoreReport& report) {
  const SpeedSummary& speed = report.overall.speed;
  if (!speed.reference_run_tokens_per_second && !speed.candidate_run_tokens_per_second) return "";
  const auto runs = [](const std::vector<RunSummary>& list) {
    std::string text;
    for (const RunSummary& run : list)
      text += (text.empty() ? " (" : "; ") + run.engine + (run.server ? " served by " + *run.server : "") + ", batch " +
              std::to_string(run.batch_size);
    return text.empty() ? text : text + ")";
  };
  return "run throughput: reference " + optional_figure(speed.reference_run_tokens_per_second) + " tokens/s" +
         runs(report.reference_runs) + ", candidate " + optional_figure(speed.candidate_run_tokens_per_second) +
         " tokens/s" + runs(report.candidate_runs) + ", speedup " + optional_figure(speed.run_speedup, "x");
}

std::string prompt_mismatch_label(const PromptMismatch& mismatch) {
  const auto name = [](const std::optional<std::string>& chat_template) {
    return chat_template ? "'" + *chat_template + "'" : std::string("not named");
  };
  const std::string templates =
      mismatch.reference_chat_template || mismatch.candidate_chat_template
          ? "chat templates: reference " + name(mismatch.reference_chat_template) + ", candidate " +
                name(mismatch.candidate_chat_template) + "; "
          : "";
  return "answered from a different prompt (" + templates + "prompt_token_ids differ at turn " +
         std::to_string(mismatch.turn) + ", token " + std::to_string(mismatch.index) + "): not compared";
}

std::string divergence_summary(const ItemResult& item) {
  if (item.missing) return "no answer in the candidate";
  if (item.prompt_mismatch) return prompt_mismatch_label(*item.prompt_mismatch);
  if (!item.divergence) return "exact";
  const Divergence& d = item.divergence->where;
  const std::string unit = *item.unit == Unit::kTokenIds ? "token" : "code point";
  return "diverges at " + unit + " " + std::to_string(d.index) + " (turn " + std::to_string(d.turn) + ", position " +
         std::to_string(d.index_in_turn) + "): reference " + symbol_label(*item.unit, d.reference_symbol) +
         ", candidate " + symbol_label(*item.unit, d.candidate_symbol) + "; " +
         attribution_label(item.divergence->attribution);
}

std::string verdict(const GateResult& gate) { return std::string("specgate score: ") + (gate.passed ? "PASSED" : "FAILED"); }

}  // namespace specgate
