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
    for (int64_t step = 0; step < k; ++step) *out++ = row.rng.uniform();
  }
  return uniforms;
}

// The draft distribution verification will take as q: the one the token was drawn from, or
// under the faults the unshaped softmax, or the tempered one without top-k and top-p.
at::Tensor recorded_distribution(const at::Tensor& shaped, const at::Tensor& logits, const DecodeOptions& options) {
  if (options.faults.has(Fault::kRawDraftDistribution)) return logits.to(at::kDouble).softmax(-1);
  if (options.faults.has(Fault::kDraftFilterSkipped))
    return sampling_distribution(logits, {.temperature = options.sampling.temperature});
  return shaped;
}

}  // namespace

void ModelDrafter::start(BatchState& state, const DecodeOptions& options, KVCache* cache) {
  TORCH_CHECK(cache != nullptr && cache->length() == 0, "ModelDrafter::start: needs an empty draft cache");
  const c10::Device device = model_.options().device();
  const int64_t width = state.width;
  model_.forward(tokens_at(state, 0, width, device), positions_at(state, 0, width, device),
                 mask_under_faults(key_valid(state, width, device), options.faults), cache);
  for (Row& row : state.rows) row.draft_cached = row.content();
}

// Every step runs on the device: the chosen tokens feed the next step without visiting the host.
DraftProposal ModelDrafter::propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) {
  const c10::Device device = model_.options().device();
  const int64_t batch = state.batch_size(), width = state.width;
  int64_t uncached = 1;
  for (const Row& row : state.rows) uncached = std::max(uncached, row.content() - row.draft_cached);
  // Rows missing one token recompute the K/V of their second-to-last token with the others.
  cache->truncate(width - uncached);

  const bool sampling = !options.sampling.greedy();
  const at::Tensor uniforms = sampling ? upload(draft_uniforms(state, k), device) : at::Tensor();
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
      const at::Tensor q = sampling_distribution(logits, options.sampling);
      distributions.push_back(recorded_distribution(q, logits, options));
      chosen = sample_tokens(q, uniforms.select(1, step));
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
  DraftProposal proposal{at::stack(tokens, 1), sampling ? at::stack(distributions, 1) : at::Tensor()};
  if (options.faults.has(Fault::kStaleDraftDistribution)) {
    const at::Tensor& fresh = proposal.distributions;
    const at::Tensor& stale = stale_distributions_;
    const bool fits = stale.defined() && stale.size(0) >= fresh.size(0) && stale.size(1) == fresh.size(1);
    if (fits) {
      proposal.distributions = stale.narrow(0, 0, fresh.size(0));
    } else {
      stale_distributions_ = fresh;
    }
  }
  return proposal;
}

}  // namespace specgate
