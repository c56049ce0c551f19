#include "impl/scoring/score_report.h"

#include <cstdio>
#include <map>

namespace specgate {
namespace {

void count(const ItemResult& item, GroupSummary& group) {
  ++group.questions;
  if (item.missing) ++group.missing;
  if (item.comparison.exact) ++group.exact;
  group.partial_match += item.comparison.partial;
  if (item.unit == Unit::kTokenIds) ++group.token_id_items;
  if (item.unit == Unit::kCodePoints) ++group.code_point_items;
  if (!item.divergence) return;
  switch (item.divergence->attribution.kind) {
    case Attribution::kHard: ++group.divergences.hard; break;
    case Attribution::kNearTie: ++group.divergences.near_tie; break;
    case Attribution::kUnattributed: ++group.divergences.unattributed; break;
    case Attribution::kLength: ++group.divergences.length; break;
  }
}

void finish(GroupSummary& group) {
  if (group.questions == 0) return;
  group.exact_match = static_cast<double>(group.exact) / static_cast<double>(group.questions);
  group.partial_match /= static_cast<double>(group.questions);
}

GroupSummary& group_named(std::vector<std::pair<std::string, GroupSummary>>& groups, std::map<std::string, size_t>& index,
                          const std::string& name) {
  const auto [it, inserted] = index.emplace(name, groups.size());
  if (inserted) groups.emplace_back(name, GroupSummary{});
  return groups[it->second].second;
}

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

constexpr size_t kShownIds = 10;

std::string id_list(const std::vector<int64_t>& ids) {
  std::string text;
  for (size_t i = 0; i < ids.size() && i < kShownIds; ++i) text += (i == 0 ? "" : ", ") + std::to_string(ids[i]);
  if (ids.size() > kShownIds) text += ", ... (" + std::to_string(ids.size() - kShownIds) + " more)";
  return text;
}

}  // namespace

std::string_view unit_name(Unit unit) { return unit == Unit::kTokenIds ? "token_ids" : "code_points"; }

std::string unit_summary(const GroupSummary& summary) {
  if (summary.token_id_items > 0 && summary.code_point_items > 0) return "mixed";
  if (summary.token_id_items > 0) return "token_ids";
  if (summary.code_point_items > 0) return "code_points";
  return "none";
}

void summarize(ScoreReport& report) {
  report.overall = {};
  report.by_subtask.clear();
  report.by_category.clear();
  std::map<std::string, size_t> subtask_index, category_index;
  for (const ItemResult& item : report.items) {
    count(item, report.overall);
    count(item, group_named(report.by_subtask, subtask_index, item.subtask));
    count(item, group_named(report.by_category, category_index, item.category));
  }
  finish(report.overall);
  for (auto& [name, group] : report.by_subtask) finish(group);
  for (auto& [name, group] : report.by_category) finish(group);
}

GateResult evaluate_gate(const ScoreReport& report) {
  const GateSettings& gate = report.settings.gate;
  const GroupSummary& overall = report.overall;
  GateResult result;
  const auto fail = [&result](std::string reason) {
    result.passed = false;
    result.reasons.push_back(std::move(reason));
  };
  if (overall.exact_match < gate.min_exact)
    fail("exact match " + format_number(overall.exact_match) + " is below --min-exact " + format_number(gate.min_exact) +
         " (" + std::to_string(overall.exact) + " of " + std::to_string(overall.questions) + " questions)");
  if (overall.partial_match < gate.min_partial)
    fail("partial match " + format_number(overall.partial_match) + " is below --min-partial " +
         format_number(gate.min_partial));
  if (gate.max_hard_divergences && overall.divergences.hard > *gate.max_hard_divergences)
    fail(std::to_string(overall.divergences.hard) + " hard divergence(s), more than --max-hard-divergences " +
         std::to_string(*gate.max_hard_divergences));
  if (!report.missing_ids.empty())
    fail(std::to_string(report.missing_ids.size()) + " question(s) of the reference have no answer in the candidate: " +
         id_list(report.missing_ids));
  if (!report.unexpected_ids.empty())
    fail(std::to_string(report.unexpected_ids.size()) + " answer(s) of the candidate are for questions not in the reference: " +
         id_list(report.unexpected_ids));
  return result;
}

}  // namespace specgate
