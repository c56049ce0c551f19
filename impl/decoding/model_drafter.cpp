#include "impl/decoding/model_drafter.h"

#include <ATen/ATen.h>

#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/fault_sites.h"
#include "impl/common/host_transfer.h"
#include "impl/model/kv_cache.h"
#include "impl/sampling/inverse_cdf.h"

namespace specgate {
namespace {

// float64 [B, K] on the host: the uniforms of the K draws of every row, from its own stream.
at::Tensor draft_uniforms(BatchState& state, int64_t k) {
  at::Tensor uniforms = at::empty({state.batch_size(), k}, at::TensorOptions().dtype(at::kDouble));
  double* out = uniforms.data_ptr<double>();
  for (Row& row : state.rows) {
    for (int64_t step = 0; step < k; ++step) *out++ = row.sampling.greedy() ? 0.0 : row.rng.uniform();
  }
  return uniforms;
}

}  // namespace

// Every step runs on the device: the chosen tokens feed the next step without visiting the host.
DraftProposal ModelDrafter::propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) {
  const c10::Device device = model_.options().device();
  const int64_t batch = state.batch_size(), width = state.width;
  int64_t uncached = 1;
  for (const Row& row : state.rows) uncached = std::max(uncached, row.content() - row.draft_slots.count);
  // Rows missing one token recompute the K/V of their second-to-last token with the others.
  cache->truncate(width - uncached);

  const bool sampling = !state.all_greedy();
  const std::vector<SamplingParams> by_row = sampling ? state.sampling() : std::vector<SamplingParams>();
  const at::Tensor uniforms = sampling ? upload(draft_uniforms(state, k), device) : at::Tensor();
  const at::Tensor greedy = sampling && state.any_greedy() ? greedy_rows(state, device).squeeze(1) : at::Tensor();
  const at::Tensor scripted = script_ != nullptr ? upload(script_->tokens(state, k), device) : at::Tensor();
  std::vector<at::Tensor> tokens, distributions;
  at::Tensor input = tokens_at(state, width - uncached, uncached, device);
  at::Tensor positions = positions_at(state, width - uncached, uncached, device);
  at::Tensor valid = mask_under_faults(key_valid(state, width, device), options.faults, /*fed_slot=*/width - 1);
  for (int64_t step = 0; step < k; ++step) {
    const at::Tensor hidden = model_.forward(input, positions, valid, cache);
    const at::Tensor logits = model_.logits(hidden.select(1, hidden.size(1) - 1));  // [B, V]
    at::Tensor chosen;
    if (sampling) {
      const at::Tensor q = sampling_distribution_under_faults(logits, by_row, options.faults);
      distributions.push_back(recorded_distribution_under_faults(q, logits, by_row, options.faults));
      chosen = sample_tokens(q, uniforms.select(1, step));
      if (greedy.defined()) chosen = at::where(greedy, logits.argmax(-1), chosen);
    } else {
      chosen = logits.argmax(-1);
    }
    if (scripted.defined()) chosen = scripted.select(1, step);
    tokens.push_back(chosen);
    if (step + 1 == k) break;  // the last draft is fed next round if it is accepted
    input = chosen.unsqueeze(1);
    positions = positions.narrow(1, positions.size(1) - 1, 1) + 1;
    valid = at::cat({valid, at::ones({batch, 1}, valid.options())}, 1);
  }
  if (!sampling) return {at::stack(tokens, 1), {}, at::Tensor()};
  return {at::stack(tokens, 1), {}, stale_distributions_.under_faults(at::stack(distributions, 1), options.faults)};
}

}  // namespace specgate
