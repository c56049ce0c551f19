#include "conformance/differential/differential.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <type_traits>

#include "conformance/commands/interrupted.h"
#include "conformance/differential/schedule.h"
#include "conformance/differential/stream_checks.h"
#include "impl/common/error.h"
#include "impl/common/sha256.h"
#include "impl/common/utc_now.h"
#include "impl/scoring/coverage.h"
#include "impl/scoring/rescorer.h"
#include "impl/scoring/scorer.h"

namespace specgate::cli {
namespace {

// A schedule's answers as collect reports them, and each turn as the server reported it.
struct Collected {
  CollectResult result;
  ReportedTurns turns;
};

// The schedule's answers, written to `out`; what each question saw in flight, and why those that
// failed did. A question that fails alone fails the run: there is nothing to compare with.
Collected collect_schedule(const DifferentialJob& job, const Schedule& schedule, const Endpoint& endpoint,
                           const std::filesystem::path& out, bool reference) {
  CollectJob collect = job.collect;
  collect.endpoint = endpoint;
  collect.out = out;
  collect.resume = false;
  collect.samples = 1;
  collect.concurrency = schedule.in_flight;
  collect.questions.clear();
  for (size_t place : question_order(schedule, job.collect.questions.size())) collect.questions.push_back(job.collect.questions[place]);
  collect.fillers = filler_questions(job.collect.questions, schedule.fillers, job.filler_chars);
  collect.stagger_seconds = schedule.stagger_seconds;
  collect.stagger_seed = schedule.stagger_seed;
  collect.defaults.stream = schedule.streamed;
  collect.keep_going = !reference;
  collect.reports_checked = false;
  Collected collected;
  std::mutex mutex;
  collect.on_completion = [&](const Question& question, size_t turn, const CompletionRequest& request, const Completion& completion) {
    ReportedTurn reported{.prompt = completion.prompt_token_ids, .completion = completion};
    if (reported.prompt.empty() && request.prompt_ids) reported.prompt = *request.prompt_ids;
    const std::lock_guard lock(mutex);
    collected.turns[{question.question_id, static_cast<int64_t>(turn)}] = std::move(reported);
  };
  collected.result = collect_answers(collect);
  if (collected.result.error) throw InputError("schedule " + schedule.name + ": " + *collected.result.error);
  if (collected.result.interrupted)
    throw Interrupted("differential: interrupted in schedule " + schedule.name + "; its answers so far are in " + out.string());
  return collected;
}

bool differs(const ItemResult& item) { return item.missing || item.prompt_mismatch || !item.comparison.exact; }

void tally(std::vector<FeatureTally>& features, const std::string& feature, const ItemResult& item) {
  auto it = std::find_if(features.begin(), features.end(), [&](const FeatureTally& f) { return f.feature == feature; });
  if (it == features.end()) it = features.insert(features.end(), FeatureTally{.feature = feature});
  ++it->answers;
  if (differs(item)) ++it->differing;
  if (item.divergence && item.divergence->attribution.kind == Attribution::kHard) ++it->hard;
}

ScheduleOutcome compare_schedule(const DifferentialJob& job, const ScheduleOutcome& reference, ScheduleOutcome outcome,
                                 const CollectResult& collected, std::vector<FeatureTally>& features) {
  const std::map<int64_t, Crowding>& crowding = collected.crowding;
  ScoreRequest request{.reference = reference.answers, .candidate = outcome.answers, .bench = job.bench,
                       .settings = job.score, .rescorer = job.rescorer};
  const ScoreReport scored = score_answers(request);
  outcome.questions = scored.overall.questions;
  outcome.identical = scored.overall.exact;
  outcome.missing = scored.overall.missing;
  outcome.divergences = scored.overall.divergences;
  for (const ItemResult& item : scored.items) {
    const auto seen = crowding.find(item.question_id);
    const Crowding crowd = seen == crowding.end() ? Crowding{} : seen->second;
    if (!item.missing) {
      tally(features, "in flight " + std::to_string(crowd.in_flight), item);
      tally(features, crowd.beside_filler ? "beside a long-prompt filler" : "no filler in flight", item);
      if (outcome.schedule.shuffled) tally(features, "shuffled order", item);
      if (outcome.schedule.stagger_seconds > 0) tally(features, "staggered arrivals", item);
      if (outcome.endpoint != reference.endpoint) tally(features, "speculation off", item);
    }
    if (!differs(item)) continue;
    ScheduleDifference difference{.question_id = item.question_id, .crowding = crowd};
    if (item.missing) {
      difference.kind = "missing";
      const auto failure = collected.failures.find(item.question_id);
      difference.note = failure == collected.failures.end() ? "not answered" : failure->second;
    } else if (item.prompt_mismatch) {
      difference.kind = "prompt_mismatch";
      difference.turn = item.prompt_mismatch->turn;
      difference.index = item.prompt_mismatch->index;
      difference.note = "the server was fed another prompt";
    } else {
      difference.kind = std::string(attribution_name(item.divergence->attribution.kind));
      difference.turn = item.divergence->where.turn;
      difference.index = item.divergence->where.index_in_turn;
      difference.attribution = item.divergence->attribution;
      difference.note = item.divergence->attribution.note;
    }
    outcome.differences.push_back(std::move(difference));
  }
  return outcome;
}

// "<schedule>: <n> <kind> (question a, b, ...)" for each kind of `items`, in the order of kinds.
template <typename Item>
void add_reasons(const std::string& schedule, const std::vector<const Item*>& items, std::vector<std::string>& reasons) {
  std::map<std::string, std::vector<const Item*>> by_kind;
  for (const Item* item : items) by_kind[item->kind].push_back(item);
  for (const auto& [kind, of_kind] : by_kind) {
    std::string reason = schedule + ": " + std::to_string(of_kind.size()) + " " + kind + " (question";
    for (size_t i = 0; i < std::min<size_t>(of_kind.size(), 5); ++i)
      reason += (i == 0 ? " " : ", ") + std::to_string(of_kind[i]->question_id);
    reason += of_kind.size() > 5 ? ", ...)" : ")";
    if constexpr (std::is_same_v<Item, SideChannelFinding>) {
      reason += "; first: " + of_kind.front()->detail;
    } else {
      if (kind == "missing") reason += "; first: " + of_kind.front()->note;
    }
    reasons.push_back(reason);
  }
}

GateResult differential_gate(const DifferentialReport& report) {
  GateResult gate;
  for (size_t s = 0; s < report.schedules.size(); ++s) {
    const ScheduleOutcome& outcome = report.schedules[s];
    std::vector<const SideChannelFinding*> findings;
    for (const SideChannelFinding& finding : outcome.side_channels) findings.push_back(&finding);
    add_reasons(outcome.schedule.name, findings, gate.reasons);
    std::vector<const ScheduleDifference*> failing;
    for (const ScheduleDifference& d : outcome.differences) {
      if (d.kind != "near_tie" || report.near_ties_fail) failing.push_back(&d);
    }
    add_reasons(outcome.schedule.name, failing, gate.reasons);
  }
  gate.passed = gate.reasons.empty();
  return gate;
}

}  // namespace

std::optional<std::string> coverage_warning_of(const DifferentialReport& report) {
  if (pages_its_cache(report.server)) return std::nullopt;
  const std::optional<int64_t> realignments = report.counters ? report.counters->realignments : std::nullopt;
  return realignment_warning(realignments, report.counters ? "the server's GET /metrics counts no realignments"
                                                           : "the server's GET /metrics has no speculation counters");
}

std::vector<Question> filler_questions(const std::vector<Question>& questions, int64_t fillers, int64_t chars) {
  std::vector<Question> out;
  if (questions.empty()) return out;
  for (int64_t f = 0; f < fillers; ++f) {
    Question filler{.question_id = -(f + 1), .category = "filler"};
    std::string text;
    for (size_t q = static_cast<size_t>(f); static_cast<int64_t>(text.size()) < chars; ++q) {
      if (!text.empty()) text += "\n\n";
      text += questions[q % questions.size()].turns.front();
    }
    filler.turns.push_back(std::move(text));
    out.push_back(std::move(filler));
  }
  return out;
}

DifferentialReport run_differential(const DifferentialJob& job, const CrowdSettings& crowd) {
  DifferentialReport report{.generated_at = utc_now(), .endpoint = endpoint_url(job.collect.endpoint),
                            .api = std::string(job.collect.dialect->name()), .model = job.collect.defaults.model,
                            .server = job.collect.server, .max_new_tokens = job.collect.defaults.max_new_tokens, .crowd = crowd,
                            .near_tie_threshold = job.score.near_tie_threshold,
                            .top_logprobs = job.collect.defaults.top_logprobs,
                            .prompt_logprobs = job.collect.defaults.prompt_logprobs, .logprob_tolerance = job.logprob_tolerance,
                            .rescored = job.rescorer != nullptr,
                            .near_ties_fail = job.near_ties_fail};
  report.bench = InputFile{job.bench, sha256_file(job.bench), std::filesystem::file_size(job.bench),
                           static_cast<int64_t>(job.collect.questions.size())};
  std::vector<std::pair<Schedule, Endpoint>> runs;
  for (const Schedule& schedule : job.schedules) runs.emplace_back(schedule, job.collect.endpoint);
  if (job.spec_off) {
    report.spec_off_endpoint = endpoint_url(*job.spec_off);
    runs.emplace_back(Schedule{.name = "spec-off"}, *job.spec_off);
  }
  std::filesystem::create_directories(job.out_dir);
  std::vector<Collected> collected;
  for (const auto& [schedule, endpoint] : runs) {
    ScheduleOutcome outcome{.schedule = schedule, .endpoint = endpoint_url(endpoint), .answers = job.out_dir / (schedule.name + ".jsonl")};
    const auto start = std::chrono::steady_clock::now();
    collected.push_back(collect_schedule(job, schedule, endpoint, outcome.answers, collected.empty()));
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.schedules.push_back(std::move(outcome));
  }
  report.schedules[0].questions = report.schedules[0].identical = collected[0].result.written;
  for (size_t s = 1; s < report.schedules.size(); ++s)
    report.schedules[s] = compare_schedule(job, report.schedules[0], std::move(report.schedules[s]), collected[s].result, report.features);
  const SideChannelSettings side{.max_new_tokens = job.collect.defaults.max_new_tokens,
                                 .top_logprobs = job.collect.dialect->gives_top_logprobs() ? job.collect.defaults.top_logprobs : 0,
                                 .listing = job.collect.dialect->alternatives_listing(),
                                 .vocabulary = job.rescorer == nullptr ? job.collect.vocabulary : std::optional(job.rescorer->vocab_size()),
                                 .prompt_logprobs = job.collect.defaults.prompt_logprobs,
                                 .tolerance = job.logprob_tolerance, .rescorer = job.rescorer};
  for (size_t s = 0; s < report.schedules.size(); ++s) {
    SideChannelCheck check = check_side_channels(collected[s].turns, side);
    if (s > 0) {
      for (SideChannelFinding& finding : compare_reports(collected[0].turns, collected[s].turns, side.top_logprobs > 0, job.logprob_tolerance))
        check.findings.push_back(std::move(finding));
    }
    if (report.schedules[s].schedule.streamed) {
      for (SideChannelFinding& finding : compare_streams(collected[0].turns, collected[s].turns, job.collect.prompt_format.tokenizer))
        check.findings.push_back(std::move(finding));
      report.schedules[s].chunk_sizes = chunk_sizes(collected[s].turns);
    }
    report.schedules[s].side_channels = std::move(check.findings);
    report.schedules[s].checked_turns = check.turns;
    report.schedules[s].rescored_turns = check.rescored_turns;
  }
  report.gate = differential_gate(report);
  return report;
}

}  // namespace specgate::cli
