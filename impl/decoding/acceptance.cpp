#include "impl/decoding/acceptance.h"

#include <algorithm>

#include <ATen/ATen.h>

namespace specgate {
namespace {

// The residual bug: inverse-CDF sampling that assumes a distribution summing to one.
int64_t sample_without_normalising(const at::Tensor& weights, SequenceRng& rng) {
  const at::Tensor cpu = weights.contiguous();
  const double* w = cpu.data_ptr<double>();
  const double target = rng.uniform();
  double cumulative = 0.0;
  int64_t last = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    if (w[i] <= 0.0) continue;
    cumulative += w[i];
    last = i;
    if (target < cumulative) return i;
  }
  return last;
}

RowVerdict verify_greedy_row(const at::Tensor& choices, const std::vector<int64_t>& drafts, const FaultSet& faults) {
  const int64_t k = static_cast<int64_t>(drafts.size());
  RowVerdict verdict;
  for (int64_t t = 0; t <= k; ++t) verdict.target_choice.push_back(choices[t].item<int64_t>());
  int64_t accepted = 0;
  if (faults.has(Fault::kCountAfterMismatch)) {
    for (int64_t t = 0; t < k; ++t) accepted += drafts[t] == verdict.target_choice[t];
  } else {
    while (accepted < k && drafts[accepted] == verdict.target_choice[accepted]) ++accepted;
  }
  verdict.accepted = accepted;
  return verdict;
}

int64_t greedy_bonus(const RowVerdict& verdict, const std::vector<int64_t>& drafts, const FaultSet& faults) {
  const int64_t k = static_cast<int64_t>(drafts.size()), a = verdict.accepted;
  if (faults.has(Fault::kBonusFromDraft) && a < k) return drafts[a];
  if (faults.has(Fault::kBonusLogitOffByOne)) return verdict.target_choice[std::min(a + 1, k)];
  return verdict.target_choice[a];
}

}  // namespace

std::vector<RowVerdict> verify_drafts(const at::Tensor& logits, const DraftProposal& proposal, BatchState& state,
                                      const DecodeOptions& options) {
  const int64_t batch = state.batch_size();
  const FaultSet& faults = options.faults;
  std::vector<RowVerdict> verdicts(batch);

  if (options.sampling.greedy()) {
    const at::Tensor choices = logits.argmax(-1).cpu();
    for (int64_t i = 0; i < batch; ++i) verdicts[i] = verify_greedy_row(choices[i], proposal.tokens[i], faults);
    if (options.rollback) {
      int64_t fewest = INT64_MAX;
      for (const RowVerdict& v : verdicts) fewest = std::min(fewest, v.accepted);
      for (RowVerdict& v : verdicts) v.accepted = fewest;
    }
    for (int64_t i = 0; i < batch; ++i) {
      const std::vector<int64_t>& drafts = proposal.tokens[i];
      verdicts[i].new_tokens.assign(drafts.begin(), drafts.begin() + verdicts[i].accepted);
      verdicts[i].new_tokens.push_back(greedy_bonus(verdicts[i], drafts, faults));
    }
    return verdicts;
  }

  const at::Tensor p = sampling_distribution(logits, options.sampling).cpu();  // [B, K+1, V]
  const at::Tensor& q = faults.has(Fault::kRawDraftDistribution) ? proposal.raw_distributions : proposal.distributions;
  // Each row draws from its own stream; under the fault every row draws from the first row's.
  auto stream = [&](int64_t i) -> SequenceRng& { return state.rows[faults.has(Fault::kSharedRandomStream) ? 0 : i].rng; };
  std::vector<int64_t> first_rejection(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const std::vector<int64_t>& drafts = proposal.tokens[i];
    const int64_t k = static_cast<int64_t>(drafts.size());
    int64_t a = 0;
    for (; a < k; ++a) {
      const double target = p[i][a][drafts[a]].item<double>(), draft = q[i][a][drafts[a]].item<double>();
      const double u = stream(i).uniform();
      if (!faults.has(Fault::kAlwaysAccept) && !(u * draft < target)) break;
    }
    first_rejection[i] = a;
  }
  int64_t fewest = *std::min_element(first_rejection.begin(), first_rejection.end());
  for (int64_t i = 0; i < batch; ++i) {
    const std::vector<int64_t>& drafts = proposal.tokens[i];
    const int64_t k = static_cast<int64_t>(drafts.size());
    SequenceRng& rng = stream(i);
    RowVerdict& verdict = verdicts[i];
    verdict.accepted = options.rollback ? fewest : first_rejection[i];
    const int64_t a = verdict.accepted;
    verdict.new_tokens.assign(drafts.begin(), drafts.begin() + a);
    int64_t bonus;
    if (a == k || a < first_rejection[i]) {
      // Every draft kept, or (rollback) a kept draft discarded: a fresh draw from p.
      bonus = sample_token(p[i][a], rng);
    } else if (faults.has(Fault::kBonusFromDraft)) {
      bonus = sample_token(q[i][a], rng);
    } else {
      const at::Tensor residual = (p[i][a] - q[i][a]).clamp_min(0.0);
      if (residual.sum().item<double>() <= 0.0) {
        bonus = sample_token(p[i][a], rng);
      } else if (faults.has(Fault::kResidualNotNormalised)) {
        bonus = sample_without_normalising(residual, rng);
      } else {
        bonus = sample_token(residual, rng);
      }
    }
    verdict.new_tokens.push_back(bonus);
  }
  return verdicts;
}

}  // namespace specgate
