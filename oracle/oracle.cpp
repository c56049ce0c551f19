#include "oracle/oracle.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/model/kv_cache.h"

namespace specgate {
namespace {

std::vector<TokenLogprob> top_logprobs(const at::Tensor& logits, int64_t k) {
  const at::Tensor logprobs = logits.to(at::kDouble).log_softmax(-1);
  const auto [values, ids] = logprobs.topk(std::min<int64_t>(k, logprobs.size(-1)));
  const at::Tensor values_cpu = values.cpu(), ids_cpu = ids.cpu();
  std::vector<TokenLogprob> out;
  for (int64_t i = 0; i < values_cpu.size(0); ++i)
    out.push_back({ids_cpu[i].item<int64_t>(), values_cpu[i].item<double>()});
  return out;
}

}  // namespace

OracleOutput oracle_generate(const Transformer& model, std::span<const int64_t> prompt, const OracleOptions& options,
                             uint64_t sequence_index) {
  TORCH_CHECK(!prompt.empty(), "oracle_generate: empty prompt");
  const auto device = model.options().device();
  const auto ids = at::TensorOptions().dtype(at::kLong).device(device);
  const int64_t prompt_length = static_cast<int64_t>(prompt.size());
  KVCache cache = model.make_cache(1, prompt_length + options.max_new_tokens);
  SequenceRng rng(options.sampling.seed, sequence_index);

  OracleOutput output;
  at::Tensor input = at::tensor(std::vector<int64_t>(prompt.begin(), prompt.end()), ids).unsqueeze(0);
  while (static_cast<int64_t>(output.tokens.size()) < options.max_new_tokens) {
    const int64_t first = cache.length(), steps = input.size(1);
    const at::Tensor positions = at::arange(first, first + steps, ids).unsqueeze(0);
    const at::Tensor key_valid = at::ones({1, first + steps}, ids.dtype(at::kBool));
    const at::Tensor hidden = model.forward(input, positions, key_valid, &cache);
    const at::Tensor logits = model.logits(hidden.select(1, steps - 1)).squeeze(0);

    const int64_t token = options.sampling.greedy()
                              ? logits.argmax().item<int64_t>()
                              : sample_token(sampling_distribution(logits, options.sampling), rng);
    output.tokens.push_back(token);
    if (options.top_logprobs > 0) output.top_logprobs.push_back(top_logprobs(logits, options.top_logprobs));
    if (std::find(options.eos_ids.begin(), options.eos_ids.end(), token) != options.eos_ids.end()) {
      output.finish_reason = FinishReason::kEos;
      break;
    }
    input = at::full({1, 1}, token, ids);
  }
  return output;
}

std::vector<std::vector<TokenLogprob>> oracle_top_logprobs(const Transformer& model, std::span<const int64_t> prompt,
                                                           std::span<const int64_t> generated, int64_t k) {
  TORCH_CHECK(!prompt.empty(), "oracle_top_logprobs: empty prompt");
  std::vector<std::vector<TokenLogprob>> out;
  if (generated.empty()) return out;
  const auto ids = at::TensorOptions().dtype(at::kLong).device(model.options().device());
  std::vector<int64_t> sequence(prompt.begin(), prompt.end());
  sequence.insert(sequence.end(), generated.begin(), generated.end() - 1);  // the last token predicts nothing asked
  const auto length = static_cast<int64_t>(sequence.size());
  const at::Tensor input = at::tensor(sequence, ids).unsqueeze(0);
  const at::Tensor positions = at::arange(length, ids).unsqueeze(0);
  const at::Tensor key_valid = at::ones({1, length}, ids.dtype(at::kBool));
  const at::Tensor hidden = model.forward(input, positions, key_valid, /*cache=*/nullptr);
  const auto first = static_cast<int64_t>(prompt.size()) - 1;
  const at::Tensor logits = model.logits(hidden.squeeze(0).narrow(0, first, static_cast<int64_t>(generated.size())));
  for (int64_t i = 0; i < logits.size(0); ++i) out.push_back(top_logprobs(logits[i], k));
  return out;
}

}  // namespace specgate
