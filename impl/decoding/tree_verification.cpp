#include "impl/decoding/tree_verification.h"

#include <algorithm>
#include <span>

#include <ATen/ATen.h>

#include "impl/common/host_transfer.h"
#include "impl/decoding/fault_sites.h"
#include "impl/sampling/inverse_cdf.h"
#include "impl/sampling/sampling.h"

namespace specgate {
namespace {

const auto kLong = at::TensorOptions().dtype(at::kLong);

// A sampled row's walk: the nodes kept, and the tokens rejected below the last of them.
struct SampledWalk {
  std::vector<int64_t> path;
  std::vector<int64_t> rejected;
};

// `probability`[i]: the target's probability of node i's token after node i's parent.
SampledWalk walk(const TreeShape& shape, std::span<const int64_t> tokens, std::span<const double> probability,
                 SequenceRng& rng, const FaultSet& faults) {
  SampledWalk walk;
  int64_t node = -1;
  for (bool descended = true; descended;) {
    descended = false;
    walk.rejected.clear();
    double left = 1.0;
    for (const int64_t child : shape.children(node)) {
      const double u = rng.uniform();
      const bool repeated = std::find(walk.rejected.begin(), walk.rejected.end(), tokens[child]) != walk.rejected.end();
      const double p = repeated ? 0.0 : probability[child], mass = sibling_mass_under_faults(left, faults);
      if (p > 0.0 && (p >= mass || u * mass < p)) {
        walk.path.push_back(child);
        node = child;
        descended = true;
        break;
      }
      if (!repeated) walk.rejected.push_back(tokens[child]);
      left -= p;
    }
  }
  return walk;
}

// A row's tokens, as many as its tree has nodes.
std::span<const int64_t> row_tokens(const DraftTrees& trees, int64_t row) {
  return {trees.tokens[row].data_ptr<int64_t>(), static_cast<size_t>(trees.shapes[row].size())};
}

// The sampled rows' walks, and their bonuses drawn on the logits' device; greedy rows are left
// empty.
std::vector<TreeAcceptance> verify_sampled(const at::Tensor& logits, const DraftTrees& trees, BatchState& state,
                                           const FaultSet& faults) {
  const c10::Device device = logits.device();
  const int64_t batch = state.batch_size(), width = trees.tokens.size(1);
  const at::Tensor p = sampling_distribution_under_faults(logits, state.sampling(), faults);  // [B, width + 1, V]
  at::Tensor parent_offsets = at::zeros({batch, width}, kLong);
  for (int64_t i = 0; i < batch; ++i) {
    const TreeShape& shape = trees.shapes[i];
    for (int64_t node = 0; node < shape.size(); ++node) parent_offsets[i][node] = shape.parent(node) + 1;
  }
  const at::Tensor at_parent =
      p.gather(1, upload(parent_offsets, device).unsqueeze(2).expand({batch, width, p.size(2)}));  // [B, width, V]
  const at::Tensor probability =
      download(at_parent.gather(2, upload(trees.tokens, device).unsqueeze(2)).squeeze(2)).contiguous();

  std::vector<TreeAcceptance> decided(batch);
  std::vector<int64_t> bonus_offsets(batch, 0), rejected_rows, rejected_tokens;
  std::vector<double> uniforms(batch, 0.0);
  for (int64_t i = 0; i < batch; ++i) {
    Row& row = state.rows[i];
    if (row.sampling.greedy()) continue;
    const std::span<const int64_t> tokens = row_tokens(trees, i);
    const std::span<const double> row_probability(probability[i].data_ptr<double>(), tokens.size());
    SampledWalk w = walk(trees.shapes[i], tokens, row_probability, row.rng, faults);
    uniforms[i] = row.rng.uniform();
    bonus_offsets[i] = w.path.empty() ? 0 : w.path.back() + 1;
    if (!rejected_siblings_kept_under_faults(faults)) {
      rejected_rows.insert(rejected_rows.end(), w.rejected.size(), i);
      rejected_tokens.insert(rejected_tokens.end(), w.rejected.begin(), w.rejected.end());
    }
    decided[i].path = std::move(w.path);
  }
  const at::Tensor offsets = upload(at::tensor(bonus_offsets, kLong), device);
  const at::Tensor after = p.gather(1, offsets.view({-1, 1, 1}).expand({-1, 1, p.size(2)})).squeeze(1);
  at::Tensor weights = after.clone();
  if (!rejected_rows.empty()) {
    weights.index_put_({upload(at::tensor(rejected_rows, kLong), device), upload(at::tensor(rejected_tokens, kLong), device)},
                       0.0);
  }
  // Rounding can leave no mass where the rejected tokens held it all; p's own draw then.
  weights = at::where(weights.gt(0).any(-1, true), weights, after);
  const at::Tensor u = upload(at::tensor(uniforms, at::TensorOptions().dtype(at::kDouble)), device);
  const at::Tensor bonus = download(sample_tokens(weights, u));
  for (int64_t i = 0; i < batch; ++i) decided[i].bonus = bonus[i].item<int64_t>();
  return decided;
}

}  // namespace

std::vector<TreeAcceptance> verify_tree(const at::Tensor& logits, const DraftTrees& trees, BatchState& state,
                                       const FaultSet& faults) {
  const int64_t batch = state.batch_size();
  std::vector<TreeAcceptance> decided =
      state.all_greedy() ? std::vector<TreeAcceptance>(batch) : verify_sampled(logits, trees, state, faults);
  if (!state.any_greedy()) return decided;
  const at::Tensor choices = download(logits.argmax(-1)).contiguous();
  for (int64_t i = 0; i < batch; ++i) {
    if (!state.rows[i].sampling.greedy()) continue;
    const TreeShape& shape = trees.shapes[i];
    decided[i] = greedy_acceptance(shape, row_tokens(trees, i),
                                   std::span<const int64_t>(choices[i].data_ptr<int64_t>(), static_cast<size_t>(shape.size() + 1)));
  }
  return decided;
}

}  // namespace specgate
