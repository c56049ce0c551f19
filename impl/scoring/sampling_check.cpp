#include "impl/scoring/sampling_check.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <numeric>
#include <ranges>
#include <set>

#include <nlohmann/json.hpp>

#include "impl/bench/question.h"
#include "impl/common/counted.h"
#include "impl/common/error.h"
#include "impl/common/sha256.h"
#include "impl/common/short_number.h"
#include "impl/common/utc_now.h"
#include "impl/scoring/answer_warpers.h"
#include "impl/scoring/pit_shift.h"
#include "impl/scoring/rescorer.h"
#include "impl/scoring/stream_registry.h"
#include "impl/statistics/multiple_testing.h"
#include "impl/statistics/poisson_binomial.h"
#include "impl/statistics/randomized_pit.h"

namespace specgate {

namespace {

// An answer's identity: the SHA-256 of its question, its turns' generated tokens and prompts.
std::string answer_digest(const AnswerRecord& record) {
  Sha256 digest;
  digest.update(nlohmann::json::array({record.question_id, record.token_ids.value_or(std::vector<std::vector<int64_t>>{}),
                                       record.prompt_token_ids.value_or(std::vector<std::vector<int64_t>>{})})
                    .dump());
  return digest.hex_digest();
}

uint64_t leading_bits(const std::string& hex_digest) { return std::stoull(hex_digest.substr(0, 16), nullptr, 16); }

// What an answer was drawn under, beside the warpers: answers of one question are exchangeable
// between the sides only when these agree (else their lengths differ by design).
struct AnswerDesign {
  std::string at;  // file:line
  std::vector<int64_t> first_prompt;
  size_t turns = 0;
  std::optional<int64_t> max_new_tokens;
};

// The PIT values of one side, per answer (its question the stratum) with the answer's subtask
// and design, and what was read.
struct SideValues {
  SampledSide side;
  std::vector<SampleUnit> units;
  std::vector<std::string> unit_subtasks;
  std::vector<AnswerDesign> unit_designs;
  std::vector<UnitEvents> unit_boundary;  // per answer, its tokens on the support's boundary
  // Per answer, the sum of its PIT tokens' pit_shift; empty without a re-scoring in the engine's dtype.
  std::vector<std::vector<double>> unit_pit_shift;
  // Per answer, its digest and how many answers alike came before it on this side: the order the
  // permutations see.
  std::vector<std::pair<std::string, int64_t>> unit_keys;
};

// The answers in their keys' order, whatever their order in their files.
void sort_by_key(SideValues& values) {
  std::vector<size_t> order(values.units.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::ranges::sort(order, {}, [&](size_t i) { return values.unit_keys[i]; });
  const auto reorder = [&](auto& per_answer) {
    auto read_order = std::move(per_answer);
    per_answer.clear();
    for (const size_t i : order) per_answer.push_back(std::move(read_order[i]));
  };
  reorder(values.units);
  reorder(values.unit_subtasks);
  reorder(values.unit_designs);
  reorder(values.unit_boundary);
  reorder(values.unit_pit_shift);
  reorder(values.unit_keys);
}

class SideReader {
 public:
  SideReader(const SamplingCheckRequest& request, AnswerWarpers& warpers, StreamRegistry& streams, int side,
             int64_t& done, int64_t total)
      : request_(request), warpers_(warpers), streams_(streams), side_(side), done_(done), total_(total) {}

  SideValues read(const std::vector<std::filesystem::path>& files) {
    SideValues values;
    for (const std::filesystem::path& file : files) {
      request_.rescorer->prepare(rescorable_sequences(file, request_.turns));
      AnswerReader reader(file, request_.turns);
      while (const std::optional<AnswerRecord> record = reader.next()) {
        add(file, *record, values);
        if (request_.progress) request_.progress(++done_, total_);
      }
      values.side.files.push_back(reader.file());
    }
    sort_by_key(values);
    return values;
  }

 private:
  void add(const std::filesystem::path& file, const AnswerRecord& record, SideValues& values) {
    const std::string at = answer_location(file, record.line);
    if (!record.token_ids) throw InputError(at + ": field 'token_ids': missing; the sampling check needs the engine's token ids");
    if (!record.prompt_token_ids)
      throw InputError(at + ": field 'prompt_token_ids': missing; the sampling check re-scores the prompt the engine was fed");
    const SamplingParams warpers = warpers_.of(record, at);
    streams_.add(record, at);
    const std::string digest = answer_digest(record);
    const int64_t occurrence = occurrences_[digest]++;
    Sha256 stream;
    stream.update(digest + " " + std::to_string(side_) + " " + std::to_string(occurrence));
    SequenceRng uniforms(request_.pit_seed, leading_bits(stream.hex_digest()));
    const std::string subtask = subtask_of(record.category.value_or("(none)"));
    ++values.side.answers;
    SampleUnit unit{.values = {}, .stratum = record.question_id};
    UnitEvents boundary{.events = 0, .trials = 0, .stratum = record.question_id};
    std::vector<double> pit_shift(request_.in_engine_dtype ? kPitShiftPoints : 0, 0.0);
    for (size_t turn = 0; turn < record.token_ids->size(); ++turn) {
      const std::vector<int64_t>& generated = (*record.token_ids)[turn];
      if (generated.empty()) continue;
      const std::vector<int64_t>& prompt = (*record.prompt_token_ids)[turn];
      check_rescorable_turn(record, turn, request_.rescorer->vocab_size(), at);
      std::string why_not;
      const std::optional<TokenMasses> masses =
          request_.rescorer->sampled_token_masses(prompt, generated, warpers, request_.margin, request_.in_engine_dtype, why_not);
      if (!masses) throw InputError(at + ": turn " + std::to_string(turn) + ": cannot be re-scored: " + why_not);
      values.side.boundary_chances.insert(values.side.boundary_chances.end(), masses->boundary_chance.begin(),
                                          masses->boundary_chance.end());
      for (size_t i = 0; i < generated.size(); ++i) {
        ++values.side.tokens;
        const double uniform = uniforms.uniform();
        const UnsupportedToken token{file.string(), record.line, record.question_id, static_cast<int64_t>(turn),
                                     static_cast<int64_t>(i), generated[i]};
        if (!masses->exact[i]) {
          values.side.beyond_top_k.push_back(token);
          continue;
        }
        ++boundary.trials;
        boundary.events += masses->boundary[i] ? 1 : 0;
        const std::optional<double> pit = randomized_pit(std::clamp(masses->below[i], 0.0, 1.0), masses->own[i], uniform);
        if (!pit) {
          (masses->boundary[i] ? values.side.boundary : values.side.outside_support).push_back(token);
          continue;
        }
        unit.values.push_back(*pit);
        if (!masses->pit_shift.empty()) std::ranges::transform(pit_shift, masses->pit_shift[i], pit_shift.begin(), std::plus{});
      }
    }
    values.units.push_back(std::move(unit));
    values.unit_subtasks.push_back(subtask);
    values.unit_boundary.push_back(boundary);
    values.unit_pit_shift.push_back(std::move(pit_shift));
    values.unit_designs.push_back({at, record.prompt_token_ids->empty() ? std::vector<int64_t>{} : record.prompt_token_ids->front(),
                                   record.token_ids->size(),
                                   record.speed.run ? std::optional(record.speed.run->max_new_tokens) : std::nullopt});
    values.unit_keys.emplace_back(digest, occurrence);
  }

  const SamplingCheckRequest& request_;
  AnswerWarpers& warpers_;
  StreamRegistry& streams_;
  int side_;  // 0 the answers, 1 the baseline
  std::map<std::string, int64_t> occurrences_;  // answers read, by digest
  int64_t& done_;  // answers read on both sides
  int64_t total_;
};

// The units of one subtask, or of every subtask when `subtask` is empty.
std::vector<SampleUnit> units_of(const SideValues& side, const std::string& subtask) {
  std::vector<SampleUnit> units;
  for (size_t i = 0; i < side.units.size(); ++i) {
    if (subtask.empty() || side.unit_subtasks[i] == subtask) units.push_back(side.units[i]);
  }
  return units;
}

// How far a correct engine of the answers' dtype moves the pooled PIT law of those units off
// uniform, as the re-scoring in that dtype measures it: the largest |mean pit_law_shift| over the
// points; 0 without that re-scoring.
double rounding_shift_of(const SideValues& side, const std::string& subtask) {
  std::vector<double> sum(kPitShiftPoints, 0.0);
  int64_t tokens = 0;
  for (size_t i = 0; i < side.units.size(); ++i) {
    if (side.unit_pit_shift[i].empty() || !(subtask.empty() || side.unit_subtasks[i] == subtask)) continue;
    std::ranges::transform(sum, side.unit_pit_shift[i], sum.begin(), std::plus{});
    tokens += static_cast<int64_t>(side.units[i].values.size());
  }
  if (tokens == 0) return 0.0;
  return std::ranges::max(sum | std::views::transform([&](double s) { return std::abs(s) / static_cast<double>(tokens); }));
}

// The PIT values of those units, pooled.
std::vector<double> values_of(const SideValues& side, const std::string& subtask) {
  std::vector<double> values;
  for (const SampleUnit& unit : units_of(side, subtask)) values.insert(values.end(), unit.values.begin(), unit.values.end());
  return values;
}

void summarise(SideValues& values, double alpha, const char* flag) {
  SampledSide& side = values.side;
  if (side.tokens == 0) throw InputError(std::string(flag) + ": the answers hold no generated token to test");
  if (static_cast<int64_t>(side.beyond_top_k.size()) == side.tokens)
    throw InputError(std::string(flag) + ": every token's PIT lies past the reference engine's top k; ask more "
                     "(--rescore-top-k) or re-score with the checkpoint (--target)");
  const std::vector<double> all = values_of(values, "");
  if (all.empty()) return;  // every token outside the support
  side.uniformity = ks_uniformity_test(all, alpha);
  side.histogram = uniformity_histogram(all);
  side.band = uniform_histogram_band(static_cast<int64_t>(all.size()), alpha);
  side.chi_square = chi_square_uniformity(side.histogram);
}

// Whether some question of `subtask` (every subtask when empty) is answered on both sides.
bool shares_a_question(const SideValues& first, const SideValues& second, const std::string& subtask) {
  std::set<int64_t> questions;
  for (const SampleUnit& unit : units_of(first, subtask)) questions.insert(unit.stratum);
  for (const SampleUnit& unit : units_of(second, subtask)) {
    if (questions.contains(unit.stratum)) return true;
  }
  return false;
}

// Throws InputError where two answers to one question, on either side, were drawn under
// different designs: another first prompt, another number of turns or another max_new_tokens.
void require_exchangeable(const SideValues& answers, const SideValues& baseline) {
  std::map<int64_t, const AnswerDesign*> first_seen;
  for (const SideValues* side : {&answers, &baseline}) {
    for (size_t i = 0; i < side->units.size(); ++i) {
      const AnswerDesign& design = side->unit_designs[i];
      const auto [seen, inserted] = first_seen.emplace(side->units[i].stratum, &design);
      if (inserted) continue;
      const AnswerDesign& other = *seen->second;
      const char* field = design.first_prompt != other.first_prompt ? "prompt_token_ids"
                          : design.turns != other.turns             ? "token_ids"
                          : design.max_new_tokens != other.max_new_tokens ? "run.max_new_tokens"
                                                                          : nullptr;
      if (field)
        throw InputError(design.at + ": field '" + field + "': question " + std::to_string(side->units[i].stratum) +
                         " was answered otherwise at " + other.at + " (" +
                         (std::string(field) == "token_ids" ? "another number of turns" : "another value") +
                         "); the two-sample test exchanges answers of one question between the sides, which must be "
                         "drawn alike");
    }
  }
}

std::string location(const UnsupportedToken& t) {
  return "question " + std::to_string(t.question_id) + ", turn " + std::to_string(t.turn) + ", position " +
         std::to_string(t.position) + ", token " + std::to_string(t.token);
}

// The boundary tokens of every side against the chances of a correct engine of their dtype.
BoundaryRateTest boundary_rate_test(std::initializer_list<const SampledSide*> sides) {
  BoundaryRateTest test{.tolerance = kBoundaryRateTolerance};
  std::vector<double> chances;
  for (const SampledSide* side : sides) {
    test.observed += static_cast<int64_t>(side->boundary.size());
    test.tokens += side->tokens;
    for (const double chance : side->boundary_chances) {
      test.expected += chance;
      chances.push_back(std::min(1.0, test.tolerance * std::clamp(chance, 0.0, 1.0)));
    }
  }
  test.p_value = poisson_binomial_upper_tail(chances, test.observed);
  return test;
}

}  // namespace

uint64_t derived_pit_seed(const std::vector<std::filesystem::path>& answers,
                          const std::vector<std::filesystem::path>& baseline) {
  Sha256 digest;
  for (const std::vector<std::filesystem::path>* side : {&answers, &baseline}) {
    std::vector<std::string> digests;
    for (const std::filesystem::path& file : *side) {
      AnswerReader reader(file, TurnScope::kAll);
      while (const std::optional<AnswerRecord> record = reader.next()) digests.push_back(answer_digest(*record));
    }
    std::ranges::sort(digests);
    for (const std::string& answer : digests) digest.update(answer + "\n");
    digest.update("\n");
  }
  return leading_bits(digest.hex_digest());
}

SamplingCheckReport check_sampling(const SamplingCheckRequest& request) {
  if (!(request.alpha > 0.0 && request.alpha < 1.0))
    throw InputError("--alpha: must be in (0, 1), got " + std::to_string(request.alpha));
  if (request.permutations < 1)
    throw InputError("--permutations: must be 1 or more, got " + std::to_string(request.permutations));
  AnswerWarpers warpers(request.sampling, "`conformance score` checks it exactly");
  SamplingCheckReport report;
  report.generated_at = utc_now();
  report.alpha = request.alpha;
  report.pit_seed = request.pit_seed;
  report.sampling_source = warpers.source();
  report.margin = request.margin;

  StreamRegistry streams;
  int64_t done = 0;
  const int64_t total = request.progress ? count_answers(request.answers) + count_answers(request.baseline) : 0;
  SideValues answers = SideReader(request, warpers, streams, /*side=*/0, done, total).read(request.answers);
  summarise(answers, request.alpha, "--answers");
  std::optional<SideValues> baseline;
  if (!request.baseline.empty()) {
    baseline = SideReader(request, warpers, streams, /*side=*/1, done, total).read(request.baseline);
    summarise(*baseline, request.alpha, "--baseline");
  }
  report.sampling = *warpers.settled();
  report.test = baseline ? "two-sample" : "one-sample";

  // Nothing to test when every token of a side lies outside the support. The pooled group is
  // the first, its subtask empty.
  const bool testable = !values_of(answers, "").empty() && !(baseline && values_of(*baseline, "").empty());
  std::vector<std::string> subtasks;
  if (testable) {
    if (baseline && !shares_a_question(answers, *baseline, ""))
      throw InputError("--baseline: its answers are to none of the questions --answers answers; the two-sample test "
                       "exchanges answers to the same question between the sides");
    if (baseline) require_exchangeable(answers, *baseline);
    subtasks.push_back("");
    for (const std::string& subtask : std::set<std::string>(answers.unit_subtasks.begin(), answers.unit_subtasks.end())) {
      const bool tested = !values_of(answers, subtask).empty() &&
                          (!baseline || (!values_of(*baseline, subtask).empty() && shares_a_question(answers, *baseline, subtask)));
      if (tested) subtasks.push_back(subtask);
    }
    // A single subtask is the pooled test again, not a second hypothesis.
    if (subtasks.size() == 2) subtasks.pop_back();
  }
  if (baseline) {
    const SampledSide &a = answers.side, &b = baseline->side;
    if (!a.boundary.empty() || !b.boundary.empty())
      report.support_rates.push_back({"support boundary", compare_rates(answers.unit_boundary, baseline->unit_boundary,
                                                                        request.permutations, request.pit_seed)});
  }
  if (request.in_engine_dtype)
    report.boundary_rate = baseline ? boundary_rate_test({&answers.side, &baseline->side}) : boundary_rate_test({&answers.side});
  const size_t hypotheses = subtasks.size() + report.support_rates.size() + (report.boundary_rate ? 1 : 0);
  const double strictest = request.alpha / static_cast<double>(std::max<size_t>(hypotheses, 1));
  // Rounding aside: 139 permutations reach 0.05 / 7 exactly.
  if (baseline && 1.0 / static_cast<double>(request.permutations + 1) > strictest * (1.0 + 1e-12))
    throw InputError("--permutations: " + std::to_string(request.permutations) + " cannot reach Holm's strictest level " +
                     short_number(strictest) + " (alpha over " + std::to_string(hypotheses) +
                     " hypotheses); give at least " + std::to_string(static_cast<int64_t>(std::ceil((1.0 - 1e-12) / strictest)) - 1));

  for (size_t g = 0; g < subtasks.size(); ++g) {
    const std::string& subtask = subtasks[g];
    const std::vector<double> ours = values_of(answers, subtask);
    SampledGroup group{.name = subtask.empty() ? "all" : subtask};
    if (!baseline) {
      group.test = ks_uniformity_test(ours, request.alpha);
      group.rounding_shift = rounding_shift_of(answers, subtask);
      group.rounding_allowance = kRoundingShiftTolerance * group.rounding_shift;
      group.p_value = ks_p_value(std::max(0.0, group.test.distance - group.rounding_allowance), static_cast<double>(group.test.n));
      group.detectable_distance = ks_detectable_distance(static_cast<double>(group.test.n), strictest) + group.rounding_allowance;
    } else {
      const std::vector<double> theirs = values_of(*baseline, subtask);
      group.test = ks_two_sample_test(ours, theirs, request.alpha);
      group.permutation = permutation_ks_test(units_of(answers, subtask), units_of(*baseline, subtask), request.permutations,
                                              request.pit_seed + 0x9E3779B97F4A7C15ULL * (g + 1), strictest);
      group.p_value = group.permutation->p_value;
      group.detectable_distance = group.permutation->detectable_distance;
    }
    report.groups.push_back(std::move(group));
  }

  // A group's permutation test can reach no lower than its smallest p-value; the rest, any.
  std::vector<double> p_values, smallest;
  for (const SampledGroup& group : report.groups) {
    p_values.push_back(group.p_value);
    smallest.push_back(group.permutation ? group.permutation->smallest_p_value : 0.0);
  }
  for (const SupportRateGroup& rates : report.support_rates) {
    p_values.push_back(rates.rates.p_value);
    smallest.push_back(rates.rates.smallest_p_value);
  }
  if (report.boundary_rate) {
    p_values.push_back(report.boundary_rate->p_value);
    smallest.push_back(0.0);
  }
  const HolmDecision holm = p_values.empty() ? HolmDecision{} : holm_after_screening(p_values, smallest, request.alpha);
  report.family_size = static_cast<int64_t>(holm.family_size);
  for (size_t i = 0; i < report.groups.size(); ++i) {
    SampledGroup& group = report.groups[i];
    group.holm_p_value = holm.adjusted_p_values[i];
    group.rejected = holm.rejected[i];
    group.tested = holm.tested[i];
    if (!group.rejected) continue;
    report.reasons.push_back(
        group.name + ": " + report.test + " Kolmogorov-Smirnov D = " + short_number(group.test.distance) +
        (group.permutation ? " over " + std::to_string(group.permutation->first_units) + " vs " +
                                 std::to_string(group.permutation->second_units) + " answers (permutation test)"
                           : " over " + std::to_string(group.test.n) + " tokens") +
        ", Holm-adjusted p = " + short_number(group.holm_p_value) + " <= alpha " + short_number(request.alpha));
  }
  for (size_t i = 0; i < report.support_rates.size(); ++i) {
    SupportRateGroup& rates = report.support_rates[i];
    rates.holm_p_value = holm.adjusted_p_values[report.groups.size() + i];
    rates.rejected = holm.rejected[report.groups.size() + i];
    if (!rates.rejected) continue;
    const RateComparison& r = rates.rates;
    report.reasons.push_back(rates.name + ": " + std::to_string(r.first_events) + " of " + std::to_string(r.first_trials) +
                             " tokens against the baseline's " + std::to_string(r.second_events) + " of " +
                             std::to_string(r.second_trials) + ", one-sided permutation test over answers, Holm-adjusted p = " +
                             short_number(rates.holm_p_value) + " <= alpha " + short_number(request.alpha));
  }
  if (report.boundary_rate) {
    BoundaryRateTest& rate = *report.boundary_rate;
    rate.holm_p_value = holm.adjusted_p_values.back();
    rate.rejected = holm.rejected.back();
    if (rate.rejected)
      report.reasons.push_back("support boundary: " + std::to_string(rate.observed) + " of " + std::to_string(rate.tokens) +
                               " tokens where a correct " + report.margin.engine_dtype + " engine draws " +
                               short_number(rate.expected, 3) + " (tolerance x" + short_number(rate.tolerance) +
                               "), one-sided exact test Holm-adjusted p = " + short_number(rate.holm_p_value) +
                               " <= alpha " + short_number(request.alpha));
  }
  for (const auto& [side, name] : {std::pair{&answers.side, "answers"}, std::pair{baseline ? &baseline->side : nullptr, "baseline"}}) {
    if (!side || side->outside_support.empty()) continue;
    report.reasons.push_back(std::string(name) + ": " + counted(static_cast<int64_t>(side->outside_support.size()), "token") +
                             " outside the shaped target distribution's support beyond the margin of " +
                             short_number(report.margin.logits) + " logits and " + short_number(report.margin.mass) +
                             " in mass" + (report.margin.engine_dtype.empty() ? "" : " (" + report.margin.engine_dtype + ")") +
                             " (first: " + location(side->outside_support.front()) + ")");
  }
  report.rejected = !report.reasons.empty();
  report.answers = std::move(answers.side);
  if (baseline) report.baseline = std::move(baseline->side);
  return report;
}

}  // namespace specgate
