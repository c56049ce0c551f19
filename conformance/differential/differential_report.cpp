#include "conformance/differential/differential_report.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/reports/input_file_json.h"
#include "impl/reports/markup.h"
#include "impl/reports/report_text.h"

namespace specgate::cli {
namespace {

using nlohmann::json;

json schedule_json(const Schedule& s) {
  return {{"name", s.name},        {"in_flight", s.in_flight},           {"shuffled", s.shuffled},
          {"order_seed", s.order_seed}, {"fillers", s.fillers},        {"stagger_seconds", s.stagger_seconds},
          {"stagger_seed", s.stagger_seed}, {"streamed", s.streamed}};
}

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

json counters_json(const std::optional<SpeculationCounters>& counters) {
  if (!counters) return nullptr;
  const auto count = [](const std::optional<int64_t>& value) { return value ? json(*value) : json(nullptr); };
  return {{"drafts", counters->drafts},
          {"draft_tokens", counters->draft_tokens},
          {"accepted_tokens", counters->accepted_tokens},
          {"ragged_rounds", count(counters->ragged_rounds)},
          {"realignments", count(counters->realignments)}};
}

json difference_json(const ScheduleDifference& d) {
  return {{"question_id", d.question_id},
          {"turn", d.turn},
          {"index", d.index},
          {"kind", d.kind},
          {"margin", optional_number(d.attribution.margin)},
          {"note", d.note},
          {"in_flight", d.crowding.in_flight},
          {"beside_filler", d.crowding.beside_filler}};
}

json finding_json(const SideChannelFinding& f) {
  return {{"question_id", f.question_id}, {"turn", f.turn}, {"index", f.index ? json(*f.index) : json(nullptr)},
          {"kind", f.kind}, {"detail", f.detail}};
}

std::string finding_text(const SideChannelFinding& f) {
  std::string text = "question " + std::to_string(f.question_id) + " turn " + std::to_string(f.turn);
  if (f.index) text += " token " + std::to_string(*f.index);
  return text + ": " + f.kind + " (" + f.detail + ")";
}

std::string schedule_features(const Schedule& s) {
  std::string text = std::to_string(s.in_flight) + " in flight";
  text += s.shuffled ? ", shuffled" : ", bench order";
  if (s.fillers > 0) text += ", " + std::to_string(s.fillers) + " fillers";
  if (s.stagger_seconds > 0) text += ", staggered up to " + short_number(s.stagger_seconds) + " s";
  if (s.streamed) text += ", streamed";
  return text;
}

// "1 token: 120, 3 tokens: 8" for a streamed schedule's chunks; "-" when none was counted.
std::string chunk_sizes_text(const std::map<int64_t, int64_t>& sizes) {
  std::string text;
  for (const auto& [tokens, chunks] : sizes)
    text += (text.empty() ? "" : ", ") + std::to_string(tokens) + (tokens == 1 ? " token: " : " tokens: ") + std::to_string(chunks);
  return text.empty() ? "-" : text;
}

std::string difference_text(const ScheduleDifference& d) {
  std::string text = "question " + std::to_string(d.question_id);
  if (d.kind != "missing") text += " turn " + std::to_string(d.turn) + " token " + std::to_string(d.index);
  text += ": " + d.kind;
  if (d.attribution.margin) text += " (margin " + short_number(*d.attribution.margin) + " nats)";
  if (!d.note.empty()) text += " (" + d.note + ")";
  text += "; " + std::to_string(d.crowding.in_flight) + " in flight" + (d.crowding.beside_filler ? ", beside a filler" : "");
  return text;
}

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Table schedule_table(const DifferentialReport& r) {
  Table table{{"schedule", "served", "endpoint", "answers", "identical", "hard", "near-tie", "unattributed", "length",
               "missing", "side-channel findings", "chunks by tokens", "seconds"}, {}};
  for (const ScheduleOutcome& o : r.schedules) {
    table.rows.push_back({o.schedule.name, schedule_features(o.schedule), o.endpoint, std::to_string(o.questions),
                          std::to_string(o.identical), std::to_string(o.divergences.hard), std::to_string(o.divergences.near_tie),
                          std::to_string(o.divergences.unattributed), std::to_string(o.divergences.length),
                          std::to_string(o.missing),
                          std::to_string(o.side_channels.size()) + " of " + std::to_string(o.checked_turns) + " turns",
                          chunk_sizes_text(o.chunk_sizes), short_number(o.seconds)});
  }
  return table;
}

Table feature_table(const DifferentialReport& r) {
  Table table{{"feature", "answers", "differing", "hard"}, {}};
  for (const FeatureTally& f : r.features)
    table.rows.push_back({f.feature, std::to_string(f.answers), std::to_string(f.differing), std::to_string(f.hard)});
  return table;
}

std::string settings_line(const DifferentialReport& r) {
  std::string line = std::to_string(r.bench.records) + " questions, " + std::to_string(r.max_new_tokens) +
                     " new tokens each, seed " + std::to_string(r.crowd.seed) + "; differences attributed " +
                     (r.rescored ? "by re-scoring with the target" : "from recorded top_logprobs only") +
                     ", near-tie threshold " + short_number(r.near_tie_threshold) + " nats. Besides tokens: usage counts, finish reasons";
  if (r.top_logprobs > 0) line += ", log-probabilities (" + std::to_string(r.top_logprobs) + " alternatives)";
  if (r.prompt_logprobs > 0) line += ", prompt log-probabilities (" + std::to_string(r.prompt_logprobs) + " alternatives)";
  if (r.top_logprobs > 0 || r.prompt_logprobs > 0) line += ", tolerance " + short_number(r.logprob_tolerance) + " nats";
  if (r.crowd.stream)
    line += "; streamed answers against the whole ones: token ids, text, the text of their ids, finish reasons, usage";
  return line + ".";
}

const char* const kFeaturesIntro = "by what each answer saw while it was served:";

// Each schedule's differences and findings, one line each, for schedules that have any.
std::vector<std::pair<std::string, std::vector<std::string>>> problem_lines(const DifferentialReport& r) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const ScheduleOutcome& o : r.schedules) {
    if (o.differences.empty() && o.side_channels.empty()) continue;
    std::vector<std::string> lines;
    for (const ScheduleDifference& d : o.differences) lines.push_back(difference_text(d));
    for (const SideChannelFinding& f : o.side_channels) lines.push_back(finding_text(f));
    out.emplace_back(o.schedule.name, std::move(lines));
  }
  return out;
}

void markdown_table(const Table& table, std::ostream& out) {
  const auto row = [&out](const std::vector<std::string>& cells) {
    out << "|";
    for (const std::string& cell : cells) out << " " << cell << " |";
    out << "\n";
  };
  row(table.header);
  out << "|";
  for (size_t i = 0; i < table.header.size(); ++i) out << "---|";
  out << "\n";
  for (const auto& cells : table.rows) row(cells);
}

void html_table(const Table& table, std::ostream& out) {
  out << "<table><tr>";
  for (const std::string& cell : table.header) out << "<th>" << escape_markup(cell) << "</th>";
  out << "</tr>\n";
  for (const auto& cells : table.rows) {
    out << "<tr>";
    for (const std::string& cell : cells) out << "<td>" << escape_markup(cell) << "</td>";
    out << "</tr>\n";
  }
  out << "</table>\n";
}

}  // namespace

json differential_report_json(const DifferentialReport& r) {
  json schedules = json::array();
  for (const ScheduleOutcome& o : r.schedules) {
    json differences = json::array();
    for (const ScheduleDifference& d : o.differences) differences.push_back(difference_json(d));
    json side_channels = json::array();
    for (const SideChannelFinding& f : o.side_channels) side_channels.push_back(finding_json(f));
    json chunk_sizes = json::array();
    for (const auto& [tokens, chunks] : o.chunk_sizes) chunk_sizes.push_back({{"tokens", tokens}, {"chunks", chunks}});
    schedules.push_back({{"schedule", schedule_json(o.schedule)},
                         {"endpoint", o.endpoint},
                         {"answers", o.answers.string()},
                         {"seconds", o.seconds},
                         {"questions", o.questions},
                         {"identical", o.identical},
                         {"missing", o.missing},
                         {"divergences",
                          {{"hard", o.divergences.hard},
                           {"near_tie", o.divergences.near_tie},
                           {"unattributed", o.divergences.unattributed},
                           {"length", o.divergences.length}}},
                         {"differences", differences},
                         {"side_channels", {{"checked_turns", o.checked_turns}, {"rescored_turns", o.rescored_turns},
                                            {"findings", side_channels}}},
                         {"chunk_sizes", chunk_sizes}});
  }
  json features = json::array();
  for (const FeatureTally& f : r.features)
    features.push_back({{"feature", f.feature}, {"answers", f.answers}, {"differing", f.differing}, {"hard", f.hard}});
  return {{"schema_version", kDifferentialReportSchemaVersion},
          {"tool", "specgate conformance differential"},
          {"generated_at", r.generated_at},
          {"endpoint", r.endpoint},
          {"spec_off_endpoint", r.spec_off_endpoint ? json(*r.spec_off_endpoint) : json(nullptr)},
          {"api", r.api},
          {"model", r.model},
          {"bench", input_file_json<json>(r.bench, "questions")},
          {"max_new_tokens", r.max_new_tokens},
          {"settings",
           {{"crowds", r.crowd.crowds},
            {"max_in_flight", r.crowd.max_in_flight},
            {"fillers", r.crowd.fillers},
            {"stagger_seconds", r.crowd.stagger_seconds},
            {"seed", r.crowd.seed},
            {"stream", r.crowd.stream},
            {"near_tie_threshold", r.near_tie_threshold},
            {"top_logprobs", r.top_logprobs},
            {"prompt_logprobs", r.prompt_logprobs},
            {"logprob_tolerance", r.logprob_tolerance},
            {"rescored", r.rescored},
            {"near_ties_fail", r.near_ties_fail}}},
          {"schedules", schedules},
          {"features", features},
          {"server_counters", counters_json(r.counters)},
          {"coverage_warning", [&r]() -> json {
             const auto warning = coverage_warning_of(r);
             return warning ? json(*warning) : json(nullptr);
           }()},
          {"gate", {{"passed", r.gate.passed}, {"reasons", r.gate.reasons}}}};
}

void write_differential_markdown(const DifferentialReport& r, std::ostream& out) {
  out << "# specgate differential: " << r.model << " at " << r.endpoint << " (" << r.api << ")\n\n";
  out << "Gate: **" << (r.gate.passed ? "passed" : "FAILED") << "**\n";
  for (const std::string& reason : r.gate.reasons) out << "- " << reason << "\n";
  out << "\n" << settings_line(r) << "\n\n";
  if (r.counters) out << counters_line(*r.counters) << "\n\n";
  if (const auto warning = coverage_warning_of(r))
    out << "**Warning:** " << *warning << "\n\n";
  markdown_table(schedule_table(r), out);
  out << "\nCompared with " << r.schedules.front().schedule.name << ", " << kFeaturesIntro << "\n\n";
  markdown_table(feature_table(r), out);
  for (const auto& [schedule, lines] : problem_lines(r)) {
    out << "\n## " << schedule << "\n\n";
    for (const std::string& line : lines) out << "- " << line << "\n";
  }
}

void write_differential_html(const DifferentialReport& r, std::ostream& out) {
  const char* verdict = r.gate.passed ? "passed" : "FAILED";
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>specgate differential: " << verdict
      << "</title><style>"
      << "body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222}"
      << "table{border-collapse:collapse;font-size:13px}th,td{padding:5px 8px;border-bottom:1px solid #ddd;text-align:left}"
      << ".pass{color:#1a7f37}.fail{color:#cf222e}.muted{color:#666;font-size:13px}"
      << ".warning{background:#fff8c5;border-left:4px solid #bf8700;padding:8px 16px}</style></head><body>\n"
      << "<h1>specgate differential: <span class=\"" << (r.gate.passed ? "pass" : "fail") << "\">" << verdict
      << "</span></h1>\n<p class=\"muted\">" << escape_markup(r.model + " at " + r.endpoint + " (" + r.api + "), " + r.generated_at)
      << "</p>\n";
  if (!r.gate.reasons.empty()) {
    out << "<ul class=\"fail\">";
    for (const std::string& reason : r.gate.reasons) out << "<li>" << escape_markup(reason) << "</li>";
    out << "</ul>\n";
  }
  out << "<p>" << escape_markup(settings_line(r)) << "</p>\n";
  if (r.counters) out << "<p>" << escape_markup(counters_line(*r.counters)) << "</p>\n";
  if (const auto warning = coverage_warning_of(r))
    out << "<p class=\"warning\">WARNING: " << escape_markup(*warning) << "</p>\n";
  html_table(schedule_table(r), out);
  out << "<p>Compared with " << escape_markup(r.schedules.front().schedule.name) << ", " << kFeaturesIntro << "</p>\n";
  html_table(feature_table(r), out);
  for (const auto& [schedule, lines] : problem_lines(r)) {
    out << "<h2>" << escape_markup(schedule) << "</h2>\n<ul>";
    for (const std::string& line : lines) out << "<li>" << escape_markup(line) << "</li>";
    out << "</ul>\n";
  }
  out << "</body></html>\n";
}

void write_differential_junit(const DifferentialReport& r, std::ostream& out) {
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"specgate differential\">\n";
  for (size_t s = 0; s < r.schedules.size(); ++s) {
    const ScheduleOutcome& o = r.schedules[s];
    const std::string classname = "specgate.differential." + escape_markup(o.schedule.name);
    const auto failing = [&r](const ScheduleDifference& d) { return d.kind != "near_tie" || r.near_ties_fail; };
    const auto failures = std::count_if(o.differences.begin(), o.differences.end(), failing);
    out << "  <testsuite name=\"" << escape_markup(o.schedule.name) << "\" tests=\""
        << o.differences.size() + o.side_channels.size() + (o.identical > 0 ? 1 : 0) << "\" failures=\""
        << failures + static_cast<int64_t>(o.side_channels.size()) << "\">\n";
    for (const ScheduleDifference& d : o.differences) {
      out << "    <testcase classname=\"" << classname << "\" name=\"question " << d.question_id << "\">\n";
      if (failing(d)) {
        out << "      <failure type=\"" << escape_markup(d.kind) << "\" message=\"" << escape_markup(difference_text(d)) << "\"/>\n";
      } else {
        out << "      <system-out>" << escape_markup(difference_text(d)) << "</system-out>\n";
      }
      out << "    </testcase>\n";
    }
    for (const SideChannelFinding& f : o.side_channels) {
      out << "    <testcase classname=\"" << classname << ".side_channels\" name=\"question " << f.question_id << " turn "
          << f.turn << "\">\n      <failure type=\"" << escape_markup(f.kind) << "\" message=\"" << escape_markup(finding_text(f))
          << "\"/>\n    </testcase>\n";
    }
    if (o.identical > 0)
      out << "    <testcase classname=\"" << classname << "\" name=\"" << o.identical << " identical answers\"/>\n";
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
}

}  // namespace specgate::cli
