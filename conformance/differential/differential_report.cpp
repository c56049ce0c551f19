#include "conformance/differential/differential_report.h"

#include <algorithm>

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
          {"stagger_seed", s.stagger_seed}};
}

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

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
  return text;
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

}  // namespace

json differential_report_json(const DifferentialReport& r) {
  json schedules = json::array();
  for (const ScheduleOutcome& o : r.schedules) {
    json differences = json::array();
    for (const ScheduleDifference& d : o.differences) differences.push_back(difference_json(d));
    json side_channels = json::array();
    for (const SideChannelFinding& f : o.side_channels) side_channels.push_back(finding_json(f));
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
                                            {"findings", side_channels}}}});
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
            {"near_tie_threshold", r.near_tie_threshold},
            {"top_logprobs", r.top_logprobs},
            {"prompt_logprobs", r.prompt_logprobs},
            {"logprob_tolerance", r.logprob_tolerance},
            {"rescored", r.rescored},
            {"near_ties_fail", r.near_ties_fail}}},
          {"schedules", schedules},
          {"features", features},
          {"gate", {{"passed", r.gate.passed}, {"reasons", r.gate.reasons}}}};
}

void write_differential_markdown(const DifferentialReport& r, std::ostream& out) {
  out << "# specgate differential: " << r.model << " at " << r.endpoint << " (" << r.api << ")\n\n";
  out << "Gate: **" << (r.gate.passed ? "passed" : "FAILED") << "**\n";
  for (const std::string& reason : r.gate.reasons) out << "- " << reason << "\n";
  out << "\n" << r.bench.records << " questions, " << r.max_new_tokens << " new tokens each, seed " << r.crowd.seed
      << "; differences attributed " << (r.rescored ? "by re-scoring with the target" : "from recorded top_logprobs only")
      << ", near-tie threshold " << short_number(r.near_tie_threshold) << " nats.\n\n";
  out << "Besides tokens: usage counts" << (r.top_logprobs > 0 ? ", log-probabilities (" + std::to_string(r.top_logprobs) +
                                                                    " alternatives, tolerance " + short_number(r.logprob_tolerance) + " nats)"
                                                              : std::string(" (no log-probabilities asked)"))
      << ".\n\n";
  out << "| schedule | served | endpoint | answers | identical | hard | near-tie | unattributed | length | missing | side-channel findings | seconds |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ScheduleOutcome& o : r.schedules) {
    out << "| " << o.schedule.name << " | " << schedule_features(o.schedule) << " | " << o.endpoint << " | " << o.questions
        << " | " << o.identical << " | " << o.divergences.hard << " | " << o.divergences.near_tie << " | "
        << o.divergences.unattributed << " | " << o.divergences.length << " | " << o.missing << " | " << o.side_channels.size()
        << " of " << o.checked_turns << " turns | " << short_number(o.seconds) << " |\n";
  }
  out << "\nCompared with " << r.schedules.front().schedule.name << ", by what each answer saw while it was served:\n\n"
      << "| feature | answers | differing | hard |\n|---|---|---|---|\n";
  for (const FeatureTally& f : r.features)
    out << "| " << f.feature << " | " << f.answers << " | " << f.differing << " | " << f.hard << " |\n";
  for (const ScheduleOutcome& o : r.schedules) {
    if (o.differences.empty() && o.side_channels.empty()) continue;
    out << "\n## " << o.schedule.name << "\n\n";
    for (const ScheduleDifference& d : o.differences) out << "- " << difference_text(d) << "\n";
    for (const SideChannelFinding& f : o.side_channels) out << "- " << finding_text(f) << "\n";
  }
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
