#include "impl/common/counted.h"
#include "impl/scoring/score_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace specgate {
namespace {

// Sums behind a group's SpeedSummary.
struct SpeedTotals {
  int64_t pass_tokens = 0, passes = 0;
  int64_t drafted = 0, accepted = 0;
  double reference_speeds = 0.0, candidate_speeds = 0.0;  // sums of per-question tokens/s
  int64_t reference_timed = 0, candidate_timed = 0;

  void add(const ItemResult& item) {
    if (item.missing || item.prompt_mismatch) return;
    const AnswerSpeed& c = item.candidate_speed;
    if (c.accept_steps > 0 && c.round_drafts && c.new_tokens) {
      // A server that lists only its passes with drafts (vLLM): every pass it left out, the
      // prefill's included, appended one token; a listed pass may run past the answer's end.
      pass_tokens += *c.new_tokens;
      passes += c.accept_steps + *c.new_tokens - std::min(c.accepted_tokens, *c.new_tokens);
    } else if (c.accept_steps > 0) {
      pass_tokens += c.accepted_tokens;
      passes += c.accept_steps;
    } else if (c.decoding_steps && c.new_tokens && *c.decoding_steps > 0) {
      pass_tokens += *c.new_tokens;
      passes += *c.decoding_steps;
    }
    if (c.drafted_tokens && c.accepted_drafts) {
      drafted += *c.drafted_tokens;
      accepted += *c.accepted_drafts;
    }
    add_speed(item.reference_speed, reference_speeds, reference_timed);
    add_speed(c, candidate_speeds, candidate_timed);
  }

  SpeedSummary summary() const {
    SpeedSummary speed;
    if (passes > 0) speed.tokens_per_pass = static_cast<double>(pass_tokens) / static_cast<double>(passes);
    if (drafted > 0) speed.acceptance = static_cast<double>(accepted) / static_cast<double>(drafted);
    if (reference_timed > 0) speed.reference_tokens_per_second = reference_speeds / static_cast<double>(reference_timed);
    if (candidate_timed > 0) speed.candidate_tokens_per_second = candidate_speeds / static_cast<double>(candidate_timed);
    if (speed.reference_tokens_per_second && speed.candidate_tokens_per_second && *speed.reference_tokens_per_second > 0.0)
      speed.speedup = *speed.candidate_tokens_per_second / *speed.reference_tokens_per_second;
    return speed;
  }

 private:
  static void add_speed(const AnswerSpeed& side, double& speeds, int64_t& timed) {
    if (!side.wall_time || !side.new_tokens || *side.wall_time <= 0.0) return;
    speeds += static_cast<double>(*side.new_tokens) / *side.wall_time;
    ++timed;
  }
};

void count(const ItemResult& item, GroupSummary& group) {
  ++group.questions;
  if (item.missing) ++group.missing;
  if (item.prompt_mismatch) ++group.prompt_mismatches;
  if (item.comparison.exact) ++group.exact;
  if (!item.prompt_mismatch) group.partial_match = group.partial_match.value_or(0.0) + item.comparison.partial;
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
  const int64_t scored = group.questions - group.prompt_mismatches;
  if (scored == 0) return;
  group.exact_match = static_cast<double>(group.exact) / static_cast<double>(scored);
  *group.partial_match /= static_cast<double>(scored);
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

// The runs one side's compared answers came from, in order of start; nullopt when an answer
// records no run, no tstamp or no token count, or a run has no positive wall time.
std::optional<std::vector<RunSummary>> runs_of(const std::vector<ItemResult>& items,
                                               const AnswerSpeed ItemResult::*side) {
  struct Totals {
    RunSummary summary;
    double last = 0.0;
  };
  std::map<std::tuple<double, std::string, int64_t>, Totals> runs;
  bool complete = true;
  for (const ItemResult& item : items) {
    if (item.missing || item.prompt_mismatch) continue;
    const AnswerSpeed& speed = item.*side;
    if (!speed.run || !speed.finished_at || !speed.new_tokens) {
      complete = false;
      continue;
    }
    Totals& run = runs[{speed.run->started_at, speed.run->engine, speed.run->batch_size}];
    run.summary.engine = speed.run->engine;
    run.summary.server = speed.run->server;
    run.summary.batch_size = speed.run->batch_size;
    ++run.summary.answers;
    run.summary.tokens += *speed.new_tokens;
    run.last = std::max(run.last, *speed.finished_at);
  }
  std::vector<RunSummary> summaries;
  for (auto& [key, run] : runs) {
    run.summary.seconds = run.last - std::get<0>(key);
    if (!(run.summary.seconds > 0.0)) complete = false;
    summaries.push_back(run.summary);
  }
  if (!complete || summaries.empty()) return std::nullopt;
  return summaries;
}

double tokens_per_second(const std::vector<RunSummary>& runs) {
  int64_t tokens = 0;
  double seconds = 0.0;
  for (const RunSummary& run : runs) tokens += run.tokens, seconds += run.seconds;
  return static_cast<double>(tokens) / seconds;
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
  SpeedTotals overall_speed;
  std::vector<SpeedTotals> subtask_speed, category_speed;
  for (const ItemResult& item : report.items) {
    count(item, report.overall);
    overall_speed.add(item);
    count(item, group_named(report.by_subtask, subtask_index, item.subtask));
    subtask_speed.resize(report.by_subtask.size());
    subtask_speed[subtask_index[item.subtask]].add(item);
    count(item, group_named(report.by_category, category_index, item.category));
    category_speed.resize(report.by_category.size());
    category_speed[category_index[item.category]].add(item);
  }
  finish(report.overall);
  report.overall.speed = overall_speed.summary();
  report.candidate_coverage = {};
  report.reference_streams = report.candidate_streams = {};
  for (const ItemResult& item : report.items) {
    if (item.missing || item.prompt_mismatch) continue;
    report.candidate_coverage.add(item.candidate_speed);
    report.reference_streams.add(item.reference_speed);
    report.candidate_streams.add(item.candidate_speed);
  }
  const auto reference_runs = runs_of(report.items, &ItemResult::reference_speed);
  const auto candidate_runs = runs_of(report.items, &ItemResult::candidate_speed);
  report.reference_runs = reference_runs.value_or(std::vector<RunSummary>{});
  report.candidate_runs = candidate_runs.value_or(std::vector<RunSummary>{});
  SpeedSummary& speed = report.overall.speed;
  if (reference_runs) speed.reference_run_tokens_per_second = tokens_per_second(*reference_runs);
  if (candidate_runs) speed.candidate_run_tokens_per_second = tokens_per_second(*candidate_runs);
  if (reference_runs && candidate_runs)
    speed.run_speedup = *speed.candidate_run_tokens_per_second / *speed.reference_run_tokens_per_second;
  for (size_t i = 0; i < report.by_subtask.size(); ++i) {
    finish(report.by_subtask[i].second);
    report.by_subtask[i].second.speed = subtask_speed[i].summary();
  }
  for (size_t i = 0; i < report.by_category.size(); ++i) {
    finish(report.by_category[i].second);
    report.by_category[i].second.speed = category_speed[i].summary();
  }
}

GateResult evaluate_gate(const ScoreReport& report) {
  const GateSettings& gate = report.settings.gate;
  const GroupSummary& overall = report.overall;
  GateResult result;
  const auto fail = [&result](std::string reason) {
    result.passed = false;
    result.reasons.push_back(std::move(reason));
  };
  // First: it explains the exact match that follows from it.
  if (!report.prompt_mismatch_ids.empty())
    fail(counted(static_cast<int64_t>(report.prompt_mismatch_ids.size()), "question") +
         (report.prompt_mismatch_ids.size() == 1 ? " was" : " were") +
         " answered from different prompts, so their answers cannot be compared (another chat "
         "template or tokenizer?): " + id_list(report.prompt_mismatch_ids));
  if (!overall.exact_match) {
    if (report.prompt_mismatch_ids.empty()) fail("no question was compared");
  } else {
    if (*overall.exact_match < gate.min_exact)
      fail("exact match " + format_number(*overall.exact_match) + " is below --min-exact " + format_number(gate.min_exact) +
           " (" + std::to_string(overall.exact) + " of " +
           counted(overall.questions - overall.prompt_mismatches, "question") +
           (overall.prompt_mismatches > 0
                ? "; " + std::to_string(overall.prompt_mismatches) + " answered from different prompts left out"
                : "") +
           ")");
    if (*overall.partial_match < gate.min_partial)
      fail("partial match " + format_number(*overall.partial_match) + " is below --min-partial " +
           format_number(gate.min_partial));
  }
  if (gate.max_hard_divergences && overall.divergences.hard > *gate.max_hard_divergences)
    fail(counted(overall.divergences.hard, "hard divergence") + ", more than --max-hard-divergences " +
         std::to_string(*gate.max_hard_divergences));
  const SpeedSummary& speed = overall.speed;
  if (gate.min_tokens_per_pass) {
    if (!speed.tokens_per_pass)
      fail("tokens per pass cannot be computed (the candidate's answers carry no accept_lengths or decoding_steps with "
           "new_tokens), and --min-tokens-per-pass " + format_number(*gate.min_tokens_per_pass) + " asks for it");
    else if (*speed.tokens_per_pass < *gate.min_tokens_per_pass)
      fail("tokens per target pass " + format_number(*speed.tokens_per_pass) + " is below --min-tokens-per-pass " +
           format_number(*gate.min_tokens_per_pass));
  }
  if (gate.min_speedup) {
    // What the system delivers where both sides record their runs, else what one request sees.
    const std::optional<double> speedup = speed.run_speedup ? speed.run_speedup : speed.speedup;
    const std::string basis = speed.run_speedup ? "run throughput" : "per-request";
    if (!speedup)
      fail("speedup cannot be computed (both sides' answers need wall_time and new_tokens or token_ids), and "
           "--min-speedup " + format_number(*gate.min_speedup) + " asks for it");
    else if (*speedup < *gate.min_speedup)
      fail(basis + " speedup " + format_number(*speedup) + "x over the reference is below --min-speedup " +
           format_number(*gate.min_speedup));
  }
  if (gate.min_coverage) {
    const Coverage& coverage = report.candidate_coverage;
    if (!coverage.known())
      fail("coverage cannot be computed (" + std::to_string(coverage.answers - coverage.reporting) + " of the " +
           counted(coverage.answers, "compared answer") + " carry no ragged_rounds and realignments), and --min-coverage " +
           std::to_string(*gate.min_coverage) + " asks for it");
    else if (coverage.realignments < *gate.min_coverage)
      fail(counted(coverage.realignments, "realignment") + " in the candidate's run, fewer than --min-coverage " +
           std::to_string(*gate.min_coverage) + ": it could not have caught the layout faults that need more");
  }
  if (!report.missing_ids.empty())
    fail(counted(static_cast<int64_t>(report.missing_ids.size()), "question") + " of the reference " +
         (report.missing_ids.size() == 1 ? "has" : "have") + " no answer in the candidate: " +
         id_list(report.missing_ids));
  if (!report.unexpected_ids.empty())
    fail(counted(static_cast<int64_t>(report.unexpected_ids.size()), "answer") + " of the candidate " +
         (report.unexpected_ids.size() == 1 ? "is" : "are") + " for questions not in the reference: " +
         id_list(report.unexpected_ids));
  return result;
}

}  // namespace specgate
