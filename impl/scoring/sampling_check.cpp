#include "impl/scoring/sampling_check.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "impl/bench/question.h"
#include "impl/common/error.h"
#include "impl/common/short_number.h"
#include "impl/common/utc_now.h"
#include "impl/scoring/answer_warpers.h"
#include "impl/scoring/rescorer.h"
#include "impl/statistics/multiple_testing.h"
#include "impl/statistics/randomized_pit.h"

namespace specgate {
namespace {

// The PIT values of one side, grouped by subtask, and what was read.
struct SideValues {
  SampledSide side;
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by_subtask;
};

class SideReader {
 public:
  SideReader(const SamplingCheckRequest& request, AnswerWarpers& warpers, uint64_t stream)
      : request_(request), warpers_(warpers), uniforms_(request.pit_seed, stream) {}

  SideValues read(const std::vector<std::filesystem::path>& files) {
    SideValues values;
    for (const std::filesystem::path& file : files) {
      AnswerReader reader(file, request_.turns);
      while (const std::optional<AnswerRecord> record = reader.next()) add(file, *record, values);
      values.side.files.push_back(reader.file());
    }
    return values;
  }

 private:
  void add(const std::filesystem::path& file, const AnswerRecord& record, SideValues& values) {
    const std::string at = answer_location(file, record.line);
    if (!record.token_ids) throw InputError(at + ": field 'token_ids': missing; the sampling check needs the engine's token ids");
    if (!record.prompt_token_ids)
      throw InputError(at + ": field 'prompt_token_ids': missing; the sampling check re-scores the prompt the engine was fed");
    const SamplingParams warpers = warpers_.of(record, at);
    if (record.speed.run && record.speed.run->sampling.seed) {
      const auto key = std::make_tuple(record.question_id, *record.speed.run->sampling.seed);
      if (!drawn_.insert(key).second)
        throw InputError(at + ": field 'run.sampling.seed': question " + std::to_string(record.question_id) + " with seed " +
                         std::to_string(std::get<1>(key)) + " appears twice; repeated draws are not independent samples");
    }
    const std::string subtask = subtask_of(record.category.value_or("(none)"));
    ++values.side.answers;
    for (size_t turn = 0; turn < record.token_ids->size(); ++turn) {
      const std::vector<int64_t>& generated = (*record.token_ids)[turn];
      if (generated.empty()) continue;
      const std::vector<int64_t>& prompt = (*record.prompt_token_ids)[turn];
      for (int64_t token : generated) {
        if (token >= request_.rescorer->vocab_size())
          throw InputError(at + ": field 'token_ids': token " + std::to_string(token) + " is outside the target's vocabulary of " +
                           std::to_string(request_.rescorer->vocab_size()));
      }
      std::string why_not;
      const std::optional<TokenMasses> masses = request_.rescorer->sampled_token_masses(prompt, generated, warpers, why_not);
      if (!masses) throw InputError(at + ": turn " + std::to_string(turn) + ": cannot be re-scored: " + why_not);
      for (size_t i = 0; i < generated.size(); ++i) {
        ++values.side.tokens;
        const std::optional<double> pit = randomized_pit(std::clamp(masses->below[i], 0.0, 1.0), masses->own[i], uniforms_.uniform());
        if (!pit) {
          values.side.outside_support.push_back({file.string(), record.line, record.question_id, static_cast<int64_t>(turn),
                                                 static_cast<int64_t>(i), generated[i]});
          continue;
        }
        values.all.push_back(*pit);
        values.by_subtask[subtask].push_back(*pit);
      }
    }
  }

  const SamplingCheckRequest& request_;
  AnswerWarpers& warpers_;
  SequenceRng uniforms_;
  std::set<std::tuple<int64_t, uint64_t>> drawn_;
};

void summarise(SideValues& values, double alpha, const char* flag) {
  SampledSide& side = values.side;
  if (side.tokens == 0) throw InputError(std::string(flag) + ": the answers hold no generated token to test");
  if (values.all.empty()) return;  // every token outside the support
  side.uniformity = ks_uniformity_test(values.all, alpha);
  side.histogram = uniformity_histogram(values.all);
  side.chi_square = chi_square_uniformity(side.histogram);
}

}  // namespace

SamplingCheckReport check_sampling(const SamplingCheckRequest& request) {
  if (!(request.alpha > 0.0 && request.alpha < 1.0))
    throw InputError("--alpha: must be in (0, 1), got " + std::to_string(request.alpha));
  AnswerWarpers warpers(request.sampling, "`conformance score` checks it exactly");
  SamplingCheckReport report;
  report.generated_at = utc_now();
  report.alpha = request.alpha;
  report.pit_seed = request.pit_seed;
  report.sampling_source = warpers.source();

  SideValues answers = SideReader(request, warpers, /*stream=*/0).read(request.answers);
  summarise(answers, request.alpha, "--answers");
  std::optional<SideValues> baseline;
  if (!request.baseline.empty()) {
    baseline = SideReader(request, warpers, /*stream=*/1).read(request.baseline);
    summarise(*baseline, request.alpha, "--baseline");
  }
  report.sampling = *warpers.settled();
  report.test = baseline ? "two-sample" : "one-sample";

  const auto test = [&](const std::vector<double>& ours, const std::vector<double>* theirs) {
    return theirs ? ks_two_sample_test(ours, *theirs, request.alpha) : ks_uniformity_test(ours, request.alpha);
  };
  // Nothing to test when every token of a side lies outside the support.
  const bool testable = !answers.all.empty() && !(baseline && baseline->all.empty());
  if (testable) report.groups.push_back({"all", test(answers.all, baseline ? &baseline->all : nullptr)});
  for (const auto& [subtask, values] : answers.by_subtask) {
    const std::vector<double>* theirs = nullptr;
    if (baseline) {
      const auto found = baseline->by_subtask.find(subtask);
      if (found == baseline->by_subtask.end()) continue;
      theirs = &found->second;
    }
    if (testable) report.groups.push_back({subtask, test(values, theirs)});
  }
  // A single subtask is the pooled test again, not a second hypothesis.
  if (report.groups.size() == 2) report.groups.pop_back();
  std::vector<double> p_values;
  for (const SampledGroup& group : report.groups) p_values.push_back(group.test.p_value);
  const HolmDecision holm = p_values.empty() ? HolmDecision{} : holm_bonferroni(p_values, request.alpha);
  for (size_t i = 0; i < report.groups.size(); ++i) {
    SampledGroup& group = report.groups[i];
    group.holm_p_value = holm.adjusted_p_values[i];
    group.rejected = holm.rejected[i];
    if (group.rejected)
      report.reasons.push_back(group.name + ": " + report.test + " Kolmogorov-Smirnov D = " + short_number(group.test.distance) + " over " +
                               std::to_string(group.test.n) + " tokens, Holm-adjusted p = " + short_number(group.holm_p_value) +
                               " <= alpha " + short_number(request.alpha));
  }
  if (!answers.side.outside_support.empty()) {
    const TokenOutsideSupport& first = answers.side.outside_support.front();
    report.reasons.push_back(std::to_string(answers.side.outside_support.size()) +
                             " token(s) outside the shaped target distribution's support (first: question " +
                             std::to_string(first.question_id) + ", turn " + std::to_string(first.turn) + ", position " +
                             std::to_string(first.position) + ", token " + std::to_string(first.token) + ")");
  }
  report.rejected = !report.reasons.empty();
  report.answers = std::move(answers.side);
  if (baseline) report.baseline = std::move(baseline->side);
  return report;
}

}  // namespace specgate
