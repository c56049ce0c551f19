#include "impl/reports/acceptance_report.h"

#include <string>

#include <nlohmann/json.hpp>

#include "impl/common/counted.h"
#include "impl/reports/input_file_json.h"
#include "impl/reports/markup.h"
#include "impl/reports/report_text.h"

namespace specgate {
namespace {

using nlohmann::json;

std::string verdict_word(const AcceptanceCheckReport& report) { return report.rejected ? "REJECTED" : "passed"; }

std::string settings_line(const AcceptanceCheckReport& report) {
  return describe(report.sampling) + " (from the " + report.sampling_source + "), K = " + std::to_string(report.draft_tokens) + " (" + report.drafter + " drafts), alpha " +
         short_number(report.alpha);
}

// "412 accepted of 980 drafted positions reached, expected 398.2: ratio 1.03 [0.95, 1.12], z 1.1, p 0.27"
std::string figures_line(const AcceptanceCheckReport& report) {
  const BernoulliSumTest& t = report.test;
  std::string line = std::to_string(t.observed) + " accepted of " + std::to_string(t.trials) +
                     " drafted positions reached (a draft is reached when every earlier draft of its round was kept), "
                     "the models imply " + short_number(t.expected);
  if (report.sampling.greedy()) return line + " (greedy: every round's count is determined)";
  if (t.ruled_out > 0)
    line += "; " + std::to_string(t.ruled_out) + " outcomes the models rule out (accepted at probability 0 or rejected at 1)";
  if (report.rounding_shift)
    line += "; re-scored in the engine's dtype they imply " + short_number(t.expected + *report.rounding_shift) +
            ", and the test allows a shift of " + short_number(t.allowed_shift) + " that way";
  return line + ": ratio " + short_number(t.ratio, 3) + " [" + short_number(t.ratio_low, 3) + ", " +
         short_number(t.ratio_high, 3) + "], z = " + short_number(t.z, 3) + ", p = " + short_number(t.p_value, 3) +
         ", detects a ratio off 1 by " + short_number(t.detectable_ratio_change, 3) + " at power 0.9";
}

// "312 tokens drawn after rejected drafts against the residual max(p - q, 0): D = 0.031, p = 0.61 (alpha 0.025)"
std::string residual_line(const ResidualTest& r) {
  std::string line = counted(r.draws, "token") + " drawn after rejected drafts, before their answer's final token, " +
                     "against the residual max(p - q, 0) they are drawn from";
  if (r.outside > 0) line += " (" + std::to_string(r.outside) + " more outside it, left out)";
  if (r.draws == 0) return line;
  line += ": Kolmogorov-Smirnov D = " + short_number(r.distance, 3);
  if (r.allowance > 0.0) line += ", " + short_number(r.allowance, 3) + " of it allowed for rounding in the engine's dtype";
  return line + ", p = " + short_number(r.p_value, 3) + " (alpha " + short_number(r.alpha) + ")";
}

std::string rounds_line(const AcceptanceCheckReport& report) {
  std::string line = std::to_string(report.rounds) + " rounds compared, " + std::to_string(report.answers) +
                     " answers; each turn's last round up to its final token (" + std::to_string(report.last_rounds_cut) + ")";
  if (report.final_trials > 0)
    line += ", the final token's trial from the engine's accepted_drafts in " + std::to_string(report.final_trials);
  if (report.first_rounds_skipped > 0)
    line += "; " + std::to_string(report.first_rounds_skipped) +
            " first rounds left out (their turn's rounds append every token, so the first may be the prefill's pass)";
  if (report.sampling.greedy())
    line += "; " + std::to_string(report.near_tie_rounds) + " rounds agree only through a near-tie (within " +
            short_number(report.near_tie_threshold) + " nats)";
  if (report.margin)
    line += "; " + std::to_string(report.boundary_trials) + " outcomes the models rule out stand within the support margin of " +
            short_number(report.margin->logits) + " logits" +
            (report.margin->engine_dtype.empty() ? "" : " (" + report.margin->engine_dtype + ")");
  if (report.implied_turns > 0)
    line += "; the rounds of " + std::to_string(report.implied_turns) +
            " turns implied by their tokens (the answers list none, the drafter proposes with certainty)";
  return line;
}

std::string shown_text(const DraftPosition& p) {
  return std::to_string(p.shown) + (p.open > 0 ? "-" + std::to_string(p.shown + p.open) : "");
}

// "by draft position, reached / accepted as the models imply / as the answers show / as the
// server counted: 1: 707 / 403 / 358 / 94, 2: ..."
std::string positions_line(const AcceptanceCheckReport& report) {
  const bool by_server = report.server_counters.has_value();
  std::string line = std::string("by draft position, reached / accepted as the models imply / as the answers show") +
                     (by_server ? " / as the server counted" : "") + ": ";
  for (size_t j = 0; j < report.positions.size(); ++j) {
    const DraftPosition& p = report.positions[j];
    line += (j > 0 ? ", " : "") + std::to_string(j + 1) + ": " + std::to_string(p.reached) + " / " +
            short_number(p.implied, 4) + " / " + shown_text(p) + (p.counted ? " / " + std::to_string(*p.counted) : "");
  }
  if (by_server)
    line += "; the server counted " + counted(report.server_counters->drafts, "draft") + ", the answers show " +
            std::to_string(report.rounds_with_drafts) + " rounds with drafts";
  return line;
}

std::string mismatch_text(const RoundMismatch& m) {
  return m.file + ":" + std::to_string(m.line) + ": question " + std::to_string(m.question_id) + ", turn " +
         std::to_string(m.turn) + ", round " + std::to_string(m.round) + " (token " + std::to_string(m.position) + "): " +
         std::to_string(m.observed) + " accepted, the draft's proposals match " + std::to_string(m.predicted);
}

}  // namespace

json acceptance_report_json(const AcceptanceCheckReport& report) {
  const BernoulliSumTest& t = report.test;
  json files = json::array();
  for (const InputFile& f : report.files) files.push_back(input_file_json<nlohmann::json>(f, "answers"));
  json mismatches = json::array();
  for (const RoundMismatch& m : report.mismatches)
    mismatches.push_back({{"file", m.file}, {"line", m.line}, {"question_id", m.question_id}, {"turn", m.turn},
                          {"round", m.round}, {"position", m.position}, {"predicted", m.predicted}, {"observed", m.observed}});
  json recovered_drafts = json::array();
  for (const RecoveredDraft& d : report.recovered_drafts)
    recovered_drafts.push_back({{"file", d.file}, {"line", d.line}, {"question_id", d.question_id}, {"turn", d.turn},
                                {"position", d.position}, {"token", d.token}});
  json out = {{"schema_version", 2},
          {"tool", "specgate acceptance"},
          {"generated_at", report.generated_at},
          {"settings",
           {{"temperature", report.sampling.temperature},
            {"top_k", report.sampling.top_k},
            {"top_p", report.sampling.top_p},
            {"min_p", report.sampling.min_p},
            {"sampling_source", report.sampling_source},
            {"draft_tokens", report.draft_tokens},
            {"drafter", report.drafter},
            {"alpha", report.alpha}}},
          {"files", files},
          {"answers", report.answers},
          {"rounds", report.rounds},
          {"last_rounds_cut", report.last_rounds_cut},
          {"first_rounds_skipped", report.first_rounds_skipped},
          {"final_trials", report.final_trials},
          {"near_tie_rounds", report.near_tie_rounds},
          {"near_tie_threshold", report.near_tie_threshold},
          {"test",
           {{"trials", t.trials},
            {"observed", t.observed},
            {"expected", t.expected},
            {"variance", t.variance},
            {"ruled_out", t.ruled_out},
            {"z", t.z},
            {"p_value", t.p_value},
            {"ratio", t.ratio},
            {"ratio_interval", {t.ratio_low, t.ratio_high}},
            {"detectable_ratio_change", t.detectable_ratio_change},
            {"allowed_shift", t.allowed_shift},
            {"alpha", t.alpha},
            {"rejected", t.rejected}}},
          {"rounding_shift", report.rounding_shift ? json(*report.rounding_shift) : json(nullptr)},
          {"residual", report.residual ? json{{"draws", report.residual->draws},
                                              {"outside", report.residual->outside},
                                              {"distance", report.residual->distance},
                                              {"rounding_shift", report.residual->rounding_shift},
                                              {"allowance", report.residual->allowance},
                                              {"p_value", report.residual->p_value},
                                              {"alpha", report.residual->alpha},
                                              {"rejected", report.residual->rejected}}
                                       : json(nullptr)},
          {"mismatches", mismatches},
          {"recovered_drafts", recovered_drafts},
          {"rejected", report.rejected},
          {"reasons", report.reasons}};
  json positions = json::array();
  for (size_t j = 0; j < report.positions.size(); ++j) {
    const DraftPosition& p = report.positions[j];
    positions.push_back({{"position", j + 1}, {"reached", p.reached}, {"implied", p.implied}, {"shown", p.shown},
                         {"open", p.open}, {"counted", p.counted ? json(*p.counted) : json(nullptr)}});
  }
  out["positions"] = positions;
  out["implied_turns"] = report.implied_turns;
  out["rounds_with_drafts"] = report.rounds_with_drafts;
  if (report.server_counters) out["server_counters"] = speculation_counters_json(*report.server_counters);
  if (report.margin) {
    out["support_margin"] = {{"logits", report.margin->logits},
                             {"engine_dtype", report.margin->engine_dtype},
                             {"rescorer_dtype", report.margin->rescorer_dtype},
                             {"source", report.margin->source}};
    out["boundary_trials"] = report.boundary_trials;
  }
  return out;
}

void write_acceptance_summary(const AcceptanceCheckReport& report, std::ostream& out) {
  out << "acceptance: " << settings_line(report) << "\n  " << rounds_line(report) << "\n  " << figures_line(report) << "\n  ";
  if (report.residual) out << residual_line(*report.residual) << "\n  ";
  out << positions_line(report) << "\n";
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < report.mismatches.size() && i < kShown; ++i) out << "  " << mismatch_text(report.mismatches[i]) << "\n";
  if (report.mismatches.size() > kShown) out << "  ... " << report.mismatches.size() - kShown << " more rounds differ\n";
  out << "verdict " << verdict_word(report) << (report.rejected ? ":" : "") << "\n";
  for (const std::string& reason : report.reasons) out << "  - " << reason << "\n";
}

void write_acceptance_markdown(const AcceptanceCheckReport& report, std::ostream& out) {
  out << "# specgate acceptance: " << verdict_word(report) << "\n\n"
      << "The engine's accepted drafts against what its target and draft checkpoints imply; " << settings_line(report)
      << ".\n\n- " << rounds_line(report) << "\n- " << figures_line(report) << "\n";
  if (report.residual) out << "- " << residual_line(*report.residual) << "\n";
  for (const std::string& reason : report.reasons) out << "- **" << reason << "**\n";
  const bool by_server = report.server_counters.has_value();
  out << "\n| draft position | reached | accepted, as the models imply | as the answers show |"
      << (by_server ? " as the server counted |" : "") << "\n|---:|---:|---:|---:|" << (by_server ? "---:|" : "") << "\n";
  for (size_t j = 0; j < report.positions.size(); ++j) {
    const DraftPosition& p = report.positions[j];
    out << "| " << j + 1 << " | " << p.reached << " | " << short_number(p.implied, 4) << " | " << shown_text(p) << " |";
    if (by_server) out << " " << p.counted.value_or(0) << " |";
    out << "\n";
  }
  if (report.mismatches.empty()) return;
  out << "\n| file:line | question | turn | round | token | accepted | draft matches |\n|---|---:|---:|---:|---:|---:|---:|\n";
  for (const RoundMismatch& m : report.mismatches)
    out << "| " << m.file << ":" << m.line << " | " << m.question_id << " | " << m.turn << " | " << m.round << " | "
        << m.position << " | " << m.observed << " | " << m.predicted << " |\n";
}

void write_acceptance_html(const AcceptanceCheckReport& report, std::ostream& out) {
  out << html_report_start("specgate acceptance", verdict_word(report), !report.rejected)
      << "<p>The engine's accepted drafts against what its target and draft checkpoints imply; "
      << escape_markup(settings_line(report)) << ".</p>\n<ul><li>" << escape_markup(rounds_line(report)) << "</li><li>"
      << escape_markup(figures_line(report)) << "</li><li>"
      << (report.residual ? escape_markup(residual_line(*report.residual)) + "</li><li>" : "")
      << escape_markup(positions_line(report)) << "</li></ul>\n";
  if (!report.reasons.empty()) {
    out << "<ul class=\"fail\">";
    for (const std::string& reason : report.reasons) out << "<li>" << escape_markup(reason) << "</li>";
    out << "</ul>\n";
  }
  if (!report.mismatches.empty()) {
    out << "<h2>Rounds whose accepted count differs from the draft's matches</h2>\n<table><tr><th>file:line</th>"
        << "<th>question</th><th>turn</th><th>round</th><th>token</th><th>accepted</th><th>draft matches</th></tr>\n";
    for (const RoundMismatch& m : report.mismatches)
      out << "<tr><td>" << escape_markup(m.file) << ":" << m.line << "</td><td>" << m.question_id << "</td><td>" << m.turn
          << "</td><td>" << m.round << "</td><td>" << m.position << "</td><td>" << m.observed << "</td><td>" << m.predicted
          << "</td></tr>\n";
    out << "</table>\n";
  }
  out << "</body></html>\n";
}

void write_acceptance_junit(const AcceptanceCheckReport& report, std::ostream& out) {
  const int failures = report.rejected ? 1 : 0;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"specgate acceptance\" tests=\"1\" failures=\""
      << failures << "\">\n<testsuite name=\"specgate.acceptance\" tests=\"1\" failures=\"" << failures
      << "\">\n<testcase classname=\"specgate.acceptance\" name=\"accepted drafts against the models\">";
  if (report.rejected) out << "<failure type=\"acceptance\" message=\"" << escape_markup(report.reasons.front()) << "\"/>";
  out << "</testcase>\n</testsuite>\n</testsuites>\n";
}

}  // namespace specgate
