#include "impl/decoding/acceptance.h"

#include <algorithm>
#include <span>

#include <ATen/ATen.h>

#include "impl/common/host_transfer.h"
#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/fault_sites.h"
#include "impl/sampling/inverse_cdf.h"

namespace specgate {
namespace {

// Verification's tensors on the device, per row: drafts kept, the first draft rejected (the
// row's draft count when none), [kept drafts, bonus, ...] (k + 1 wide) and, greedy, the
// target's choices.
struct DeviceDecisions {
  at::Tensor accepted, first_rejection, tokens, choices;
};

// A round's drafts on the logits' device: tokens [B, k], each row's count [B] and which
// columns are its own (bool [B, k]; the rest is padding, never kept).
struct Drafts {
  at::Tensor tokens, lengths, proposed;
};

// A proposal without per-row lengths costs no copy to the device.
Drafts drafts_on(const DraftProposal& proposal, const FaultSet& faults) {
  const at::Tensor& tokens = proposal.tokens;
  const int64_t k = tokens.size(1);
  const at::Tensor lengths =
      proposal.lengths.empty()
          ? at::full({tokens.size(0)}, k, tokens.options())
          : upload(at::tensor(at::ArrayRef<int64_t>(proposal.lengths), at::TensorOptions().dtype(at::kLong)),
                   tokens.device());
  const at::Tensor verified = verified_lengths_under_faults(lengths, k, faults);
  return {tokens, verified, at::arange(k, tokens.options()).unsqueeze(0).lt(verified.unsqueeze(1))};
}

// t [B, N] at a per-row column index [B] -> [B].
at::Tensor at_column(const at::Tensor& t, const at::Tensor& index) { return t.gather(1, index.unsqueeze(1)).squeeze(1); }

// t [B, N, V] at a per-row index [B] along N -> [B, V].
at::Tensor at_position(const at::Tensor& t, const at::Tensor& index) {
  return t.gather(1, index.view({-1, 1, 1}).expand({-1, 1, t.size(2)})).squeeze(1);
}

// How many leading entries of each row of `passed` (bool [B, K]) are true.
at::Tensor leading_passes(const at::Tensor& passed, const FaultSet& faults) {
  return accepted_count_under_faults(passed.to(at::kLong).cumprod(1).sum(1), passed, faults);
}

// Rollback keeps the batch's smallest number of drafts in every row.
at::Tensor kept_drafts(const at::Tensor& first_rejection, const DecodeOptions& options) {
  return options.rollback ? first_rejection.amin().expand_as(first_rejection) : first_rejection;
}

// [d_1 .. d_a, bonus, bonus ...]: K + 1 tokens per row, of which the first a + 1 are the row's.
at::Tensor kept_then_bonus(const at::Tensor& drafts, const at::Tensor& accepted, const at::Tensor& bonus) {
  const at::Tensor slots = at::arange(drafts.size(1) + 1, accepted.options()).unsqueeze(0);
  const at::Tensor column = bonus.unsqueeze(1);
  return at::where(slots.lt(accepted.unsqueeze(1)), at::cat({drafts, column}, 1), column);
}

// The greedy bonus: the target's choice after the kept drafts.
at::Tensor greedy_bonus(const at::Tensor& choices, const at::Tensor& drafts, const at::Tensor& accepted,
                        const at::Tensor& lengths, const FaultSet& faults) {
  const at::Tensor column = bonus_column_under_faults(accepted, drafts.size(1), lengths, faults);
  return greedy_bonus_under_faults(at_column(choices, column), drafts, accepted, faults);
}

DeviceDecisions verify_greedy(const at::Tensor& logits, const Drafts& drafts, const DecodeOptions& options) {
  const at::Tensor choices = logits.argmax(-1);  // [B, k+1]
  const at::Tensor& tokens = drafts.tokens;
  const at::Tensor passed = tokens.eq(choices.narrow(1, 0, tokens.size(1))).logical_and(drafts.proposed);
  const at::Tensor first_rejection = leading_passes(passed, options.faults);
  const at::Tensor accepted = kept_drafts(first_rejection, options);
  const at::Tensor bonus = greedy_bonus(choices, tokens, accepted, drafts.lengths, options.faults);
  return {accepted, first_rejection, kept_then_bonus(tokens, accepted, bonus), choices};
}

// The random stream batch row i draws from.
SequenceRng& stream(BatchState& state, size_t i, const FaultSet& faults) {
  return state.rows[stream_row_under_faults(i, faults)].rng;
}

// float64 [B, K+1] on the host: the next K + 1 uniforms of each row's stream, drawn from a
// copy; consume() later takes from the stream itself the ones a sequential walk would use.
at::Tensor verification_uniforms(BatchState& state, int64_t k, const FaultSet& faults) {
  at::Tensor uniforms = at::empty({state.batch_size(), k + 1}, at::TensorOptions().dtype(at::kDouble));
  double* out = uniforms.data_ptr<double>();
  for (size_t i = 0; i < state.rows.size(); ++i) {
    SequenceRng ahead = stream(state, i, faults);
    for (int64_t j = 0; j <= k; ++j) *out++ = ahead.uniform();
  }
  return uniforms;
}

void consume(BatchState& state, const std::vector<int64_t>& first_rejection, const std::vector<int64_t>& lengths,
             const FaultSet& faults) {
  for (size_t i = 0; i < state.rows.size(); ++i) {
    if (state.rows[i].sampling.greedy()) continue;
    const int64_t used = std::min(first_rejection[i] + 1, lengths[i]) + 1;  // the drafts tested, the bonus
    for (int64_t n = 0; n < used; ++n) stream(state, i, faults).uniform();
  }
}

// q(d) and q at the bonus's position: what the drafter recorded, or for a drafter whose tokens
// are not drawn a point mass on each token.
at::Tensor draft_probability(const DraftProposal& proposal, const at::Tensor& drafts) {
  if (!proposal.distributions.defined()) return at::ones(drafts.sizes(), drafts.options().dtype(at::kDouble));
  return proposal.distributions.gather(2, drafts.unsqueeze(2)).squeeze(2);
}

at::Tensor draft_distribution_at(const DraftProposal& proposal, const at::Tensor& drafts, const at::Tensor& position,
                                 int64_t vocab) {
  if (proposal.distributions.defined()) return at_position(proposal.distributions, position);
  return at::one_hot(at_column(drafts, position), vocab).to(at::kDouble);
}

DeviceDecisions verify_sampled(const at::Tensor& logits, const DraftProposal& proposal, const Drafts& drafts,
                               const at::Tensor& uniforms, std::span<const SamplingParams> sampling,
                               const DecodeOptions& options) {
  const FaultSet& faults = options.faults;
  const at::Tensor& tokens = drafts.tokens;
  const int64_t k = tokens.size(1);
  const at::Tensor p = sampling_distribution_under_faults(logits, sampling, faults);  // [B, k+1, V]
  at::Tensor first_rejection = at::zeros({tokens.size(0)}, tokens.options());
  if (k > 0) {
    const at::Tensor p_of_draft = p.narrow(1, 0, k).gather(2, tokens.unsqueeze(2)).squeeze(2);
    const at::Tensor passed = (uniforms.narrow(1, 0, k) * draft_probability(proposal, tokens)).lt(p_of_draft);
    first_rejection = leading_passes(draft_tests_under_faults(passed, faults).logical_and(drafts.proposed), faults);
  }
  const at::Tensor accepted = kept_drafts(first_rejection, options);
  // The bonus's uniform follows the ones the drafts tested.
  at::Tensor u = at_column(uniforms, at::minimum(first_rejection + 1, drafts.lengths));
  const at::Tensor p_next = at_position(p, accepted);
  at::Tensor weights = p_next;
  if (k > 0) {
    // A row that stopped at a rejection draws from the residual (from p when it is empty); a
    // row that kept every one of its drafts, or that rollback cut short, draws afresh from p.
    const at::Tensor q_next = draft_distribution_at(proposal, tokens, accepted.clamp_max(k - 1), p.size(2));
    const at::Tensor r = residual_under_faults((p_next - q_next).clamp_min(0.0), q_next, faults);
    const at::Tensor from_residual =
        accepted.eq(first_rejection).logical_and(accepted.lt(drafts.lengths)).logical_and(r.gt(0).any(-1));
    weights = at::where(from_residual.unsqueeze(1), r, p_next);
    u = residual_uniform_under_faults(u, weights, from_residual, faults);
  }
  return {accepted, first_rejection, kept_then_bonus(tokens, accepted, sample_tokens(weights, u)), at::Tensor()};
}

// The greedy rows' decisions where `greedy` (bool [B, 1]) is true, the sampled rows' elsewhere.
DeviceDecisions row_by_row(const at::Tensor& greedy, const DeviceDecisions& greedy_rows, const DeviceDecisions& sampled_rows) {
  const at::Tensor row_greedy = greedy.squeeze(1);
  return {at::where(row_greedy, greedy_rows.accepted, sampled_rows.accepted),
          at::where(row_greedy, greedy_rows.first_rejection, sampled_rows.first_rejection),
          at::where(greedy, greedy_rows.tokens, sampled_rows.tokens), greedy_rows.choices};
}

}  // namespace

std::vector<RowDecision> verify_drafts(const at::Tensor& logits, const DraftProposal& proposal, BatchState& state,
                                      const DecodeOptions& options) {
  const int64_t batch = state.batch_size();
  const c10::Device device = logits.device();
  const Drafts drafts = drafts_on(proposal, options.faults);
  const int64_t k = drafts.tokens.size(1);
  const bool greedy = greedy_under_faults(state.all_greedy(), options.faults);
  // A batch of greedy and sampled rows decides both ways and takes each row's own; rollback's
  // shared count would need one decision over both.
  const bool mixed = !greedy && state.any_greedy();
  TORCH_CHECK(!(mixed && options.rollback), "rollback decodes greedy and sampled sequences in batches of their own");
  DeviceDecisions decided;
  if (greedy) {
    decided = verify_greedy(logits, drafts, options);
  } else {
    decided = verify_sampled(logits, proposal, drafts, upload(verification_uniforms(state, k, options.faults), device),
                             state.sampling(), options);
    if (mixed) decided = row_by_row(greedy_rows(state, device), verify_greedy(logits, drafts, options), decided);
  }

  std::vector<at::Tensor> parts = {decided.accepted.unsqueeze(1), decided.first_rejection.unsqueeze(1), decided.tokens,
                                   drafts.tokens};
  if (greedy || mixed) parts.push_back(decided.choices);
  const at::Tensor host = download(at::cat(parts, 1));
  const int64_t* row = host.data_ptr<int64_t>();
  const int64_t stride = host.size(1);
  std::vector<RowDecision> decisions(batch);
  std::vector<int64_t> first_rejection(batch);
  const std::vector<int64_t> lengths = proposal.row_lengths();
  for (int64_t i = 0; i < batch; ++i, row += stride) {
    RowDecision& v = decisions[i];
    v.accepted = row[0];
    first_rejection[i] = row[1];
    v.new_tokens.assign(row + 2, row + 2 + v.accepted + 1);
    v.drafted.assign(row + 3 + k, row + 3 + k + lengths[i]);
    if (greedy || (mixed && state.rows[i].sampling.greedy())) v.target_choice.assign(row + 3 + 2 * k, row + 4 + 3 * k);
  }
  if (!state.all_greedy()) consume(state, first_rejection, lengths, options.faults);
  return decisions;
}

}  // namespace specgate
