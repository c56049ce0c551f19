#include "impl/decoding/model_drafter.h"

#include <ATen/ATen.h>

#include "impl/decoding/batch_tensors.h"
#include "impl/model/kv_cache.h"

namespace specgate {

void ModelDrafter::start(BatchState& state, const DecodeOptions& options, KVCache* cache) {
  TORCH_CHECK(cache != nullptr && cache->length() == 0, "ModelDrafter::start: needs an empty draft cache");
  const c10::Device device = model_.options().device();
  const int64_t width = state.width;
  const bool let_padding = options.faults.has(Fault::kMaskLetsPaddingThrough);
  model_.forward(tokens_at(state, 0, width, device), positions_at(state, 0, width, device),
                 key_valid(state, width, device, let_padding), cache);
  for (Row& row : state.rows) row.draft_cached = row.content();
}

DraftProposal ModelDrafter::propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) {
  const c10::Device device = model_.options().device();
  const int64_t batch = state.batch_size(), width = state.width;
  int64_t uncached = 1;
  for (const Row& row : state.rows) uncached = std::max(uncached, row.content() - row.draft_cached);
  // Rows missing one token recompute the K/V of their second-to-last token with the others.
  cache->truncate(width - uncached);

  const bool sampling = !options.sampling.greedy();
  DraftProposal proposal;
  proposal.tokens.assign(batch, {});
  if (sampling) {
    const auto options64 = at::TensorOptions().dtype(at::kDouble);
    proposal.distributions = at::empty({batch, k, model_.config().vocab_size}, options64);
    proposal.raw_distributions = at::empty_like(proposal.distributions);
  }

  const bool let_padding = options.faults.has(Fault::kMaskLetsPaddingThrough);
  const int64_t hidden_slot = options.faults.has(Fault::kBonusNotFed) ? width - 1 : -1;
  at::Tensor input = tokens_at(state, width - uncached, uncached, device);
  at::Tensor positions = positions_at(state, width - uncached, uncached, device);
  at::Tensor valid = key_valid(state, width, device, let_padding, hidden_slot);
  for (int64_t step = 0; step < k; ++step) {
    const at::Tensor hidden = model_.forward(input, positions, valid, cache);
    const at::Tensor logits = model_.logits(hidden.select(1, hidden.size(1) - 1));  // [B, V]
    std::vector<int64_t> chosen(batch);
    if (sampling) {
      const at::Tensor q = sampling_distribution(logits, options.sampling).cpu();
      proposal.distributions.select(1, step).copy_(q);
      proposal.raw_distributions.select(1, step).copy_(logits.to(at::kDouble).softmax(-1).cpu());
      for (int64_t i = 0; i < batch; ++i) chosen[i] = sample_token(q[i], state.rows[i].rng);
    } else {
      const at::Tensor argmax = logits.argmax(-1).cpu();
      for (int64_t i = 0; i < batch; ++i) chosen[i] = argmax[i].item<int64_t>();
    }
    for (int64_t i = 0; i < batch; ++i) {
      if (script_ != nullptr) chosen[i] = script_->token(state.rows[i], step);
      proposal.tokens[i].push_back(chosen[i]);
    }
    if (step + 1 == k) break;  // the last draft is fed next round if it is accepted
    input = at::tensor(chosen, at::TensorOptions().dtype(at::kLong)).view({batch, 1}).to(device);
    positions = positions_at(state, width + step, 1, device);
    valid = at::cat({valid, at::ones({batch, 1}, valid.options())}, 1);
  }
  return proposal;
}

}  // namespace specgate
