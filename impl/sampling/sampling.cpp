#include "impl/sampling/sampling.h"

#include <cmath>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/common/error.h"
#include "impl/common/short_number.h"
#include "impl/sampling/inverse_cdf.h"

namespace specgate {

void validate(const SamplingParams& params) {
  if (!(params.temperature >= 0.0) || !std::isfinite(params.temperature))
    throw InputError("--temperature: must be a finite number >= 0, got " + std::to_string(params.temperature));
  if (params.top_k < 0) throw InputError("--top-k: must be >= 0, got " + std::to_string(params.top_k));
  if (!(params.top_p > 0.0 && params.top_p <= 1.0))
    throw InputError("--top-p: must be in (0, 1], got " + std::to_string(params.top_p));
  if (!(params.min_p >= 0.0 && params.min_p <= 1.0))
    throw InputError("--min-p: must be in [0, 1], got " + std::to_string(params.min_p));
}

std::string describe(const SamplingParams& params) {
  if (params.greedy()) return "greedy";
  return "temperature " + short_number(params.temperature) + ", top-k " +
         (params.top_k > 0 ? std::to_string(params.top_k) : "off") + ", top-p " +
         (params.top_p < 1.0 ? short_number(params.top_p) : "off") + ", min-p " +
         (params.min_p > 0.0 ? short_number(params.min_p) : "off");
}

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
    const auto [sorted, order] = scaled.sort(-1, /*descending=*/false);
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
