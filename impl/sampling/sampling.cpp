#include "impl/sampling/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/sampling/inverse_cdf.h"

namespace specgate {

at::Tensor sampling_distribution(const at::Tensor& logits, const SamplingParams& params) {
  TORCH_CHECK(!params.greedy(), "sampling_distribution needs a temperature > 0");
  at::Tensor scaled = logits.to(at::kDouble) / params.temperature;
  const int64_t vocab = scaled.size(-1);
  const double minus_inf = -std::numeric_limits<double>::infinity();
  if (params.top_k > 0 && params.top_k < vocab) {
    const at::Tensor kth = std::get<0>(scaled.topk(params.top_k, -1)).narrow(-1, params.top_k - 1, 1);
    scaled = scaled.masked_fill(scaled.lt(kth), minus_inf);
  }
  if (params.top_p < 1.0) {
    // As Hugging Face's TopPLogitsWarper: ascending order, drop the tokens whose cumulative
    // mass stays within 1 - top_p, never the most likely one.
    const auto [sorted, order] = scaled.sort(/*stable=*/true, -1, /*descending=*/false);
    at::Tensor drop_sorted = sorted.softmax(-1).cumsum(-1).le(1.0 - params.top_p);
    drop_sorted.narrow(-1, vocab - 1, 1).fill_(false);
    scaled = scaled.masked_fill(at::empty_like(drop_sorted).scatter_(-1, order, drop_sorted), minus_inf);
  }
  if (params.min_p > 0.0) {
    // As Hugging Face's MinPLogitsWarper; the most likely token always passes.
    const at::Tensor probs = scaled.softmax(-1);
    scaled = scaled.masked_fill(probs.lt(params.min_p * probs.amax(-1, /*keepdim=*/true)), minus_inf);
  }
  return scaled.softmax(-1);
}

namespace {

// One value per row as float64 [B, 1, ..., 1] beside `like` [B, ..., V].
at::Tensor per_row(const std::vector<double>& values, const at::Tensor& like) {
  std::vector<int64_t> shape(like.dim(), 1);
  shape[0] = like.size(0);
  return at::tensor(values, at::TensorOptions().dtype(at::kDouble)).view(shape).to(like.device());
}

}  // namespace

at::Tensor sampling_distribution(const at::Tensor& logits, std::span<const SamplingParams> rows) {
  TORCH_CHECK(static_cast<int64_t>(rows.size()) == logits.size(0), "sampling_distribution: one setting per row");
  const auto sampled = std::find_if(rows.begin(), rows.end(), [](const SamplingParams& p) { return !p.greedy(); });
  TORCH_CHECK(sampled != rows.end(), "sampling_distribution needs a temperature > 0 in some row");
  const bool alike = std::all_of(rows.begin(), rows.end(), [&](const SamplingParams& p) {
    return p.greedy() || p.same_warpers(*sampled);
  });
  if (alike) return sampling_distribution(logits, *sampled);

  // The warpers above with a column of settings in place of each scalar; a greedy row passes
  // through temperature 1 and no filter.
  const int64_t vocab = logits.size(-1);
  std::vector<double> temperature, kth_index, top_k_off, drop_mass, min_p;
  int64_t widest_k = 0;
  for (const SamplingParams& p : rows) {
    const bool filters = !p.greedy();
    const bool top_k = filters && p.top_k > 0 && p.top_k < vocab;
    temperature.push_back(filters ? p.temperature : 1.0);
    kth_index.push_back(top_k ? static_cast<double>(p.top_k - 1) : 0.0);
    top_k_off.push_back(top_k ? 0.0 : 1.0);
    drop_mass.push_back(filters ? 1.0 - p.top_p : 0.0);
    min_p.push_back(filters ? p.min_p : 0.0);
    if (top_k) widest_k = std::max(widest_k, p.top_k);
  }
  const double minus_inf = -std::numeric_limits<double>::infinity();
  at::Tensor scaled = logits.to(at::kDouble) / per_row(temperature, logits);
  if (widest_k > 0) {
    const at::Tensor largest = std::get<0>(scaled.topk(widest_k, -1));
    std::vector<int64_t> index_shape(largest.sizes().begin(), largest.sizes().end());
    index_shape.back() = 1;
    const at::Tensor index = per_row(kth_index, largest).to(at::kLong).expand(index_shape);
    const at::Tensor kth = largest.gather(-1, index).masked_fill(per_row(top_k_off, largest).to(at::kBool), minus_inf);
    scaled = scaled.masked_fill(scaled.lt(kth), minus_inf);
  }
  if (std::any_of(drop_mass.begin(), drop_mass.end(), [](double mass) { return mass > 0.0; })) {
    const auto [sorted, order] = scaled.sort(/*stable=*/true, -1, /*descending=*/false);
    at::Tensor drop_sorted = sorted.softmax(-1).cumsum(-1).le(per_row(drop_mass, sorted));
    drop_sorted.narrow(-1, vocab - 1, 1).fill_(false);
    scaled = scaled.masked_fill(at::empty_like(drop_sorted).scatter_(-1, order, drop_sorted), minus_inf);
  }
  if (std::any_of(min_p.begin(), min_p.end(), [](double p) { return p > 0.0; })) {
    const at::Tensor probs = scaled.softmax(-1);
    scaled = scaled.masked_fill(probs.lt(per_row(min_p, probs) * probs.amax(-1, /*keepdim=*/true)), minus_inf);
  }
  return scaled.softmax(-1);
}

SequenceRng::SequenceRng(uint64_t run_seed, uint64_t sequence_index) {
  std::seed_seq seeds{static_cast<uint32_t>(run_seed), static_cast<uint32_t>(run_seed >> 32),
                      static_cast<uint32_t>(sequence_index), static_cast<uint32_t>(sequence_index >> 32)};
  engine_.seed(seeds);
}

double SequenceRng::uniform() { return std::generate_canonical<double, 53>(engine_); }

int64_t sample_token(const at::Tensor& probs, SequenceRng& rng) {
  TORCH_CHECK(probs.dim() == 1, "sample_token expects a 1-D distribution");
  const at::Tensor weights = probs.to(at::kCPU, at::kDouble);
  return sample_tokens(weights, at::scalar_tensor(rng.uniform(), weights.options())).item<int64_t>();
}

}  // namespace specgate
