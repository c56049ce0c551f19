#include "oracle/oracle.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/model/kv_cache.h"

namespace specgate {
namespace {

// The `k` most likely tokens of float64 log-probabilities over the vocabulary.
std::vector<TokenLogprob> most_likely(const at::Tensor& logprobs, int64_t k) {
  const auto [values, ids] = logprobs.topk(std::min<int64_t>(k, logprobs.size(-1)));
  const at::Tensor values_cpu = values.cpu(), ids_cpu = ids.cpu();
  std::vector<TokenLogprob> out;
  for (int64_t i = 0; i < values_cpu.size(0); ++i)
    out.push_back({ids_cpu[i].item<int64_t>(), values_cpu[i].item<double>()});
  return out;
}

std::vector<TokenLogprob> top_logprobs(const at::Tensor& logits, int64_t k) {
  return most_likely(logits.to(at::kDouble).log_softmax(-1), k);
}

// The model's log-probabilities, in float64, after each of the `count` tokens of `tokens` that
// end at its end less one: [count, V], one forward pass.
at::Tensor logprobs_before_last(const Transformer& model, const std::vector<int64_t>& tokens, int64_t count) {
  const auto ids = at::TensorOptions().dtype(at::kLong).device(model.options().device());
  const std::vector<int64_t> fed(tokens.begin(), tokens.end() - 1);  // the last token predicts nothing asked
  const auto length = static_cast<int64_t>(fed.size());
  const at::Tensor hidden = model.forward(at::tensor(fed, ids).unsqueeze(0), at::arange(length, ids).unsqueeze(0),
                                          at::ones({1, length}, ids.dtype(at::kBool)), /*cache=*/nullptr);
  return model.logits(hidden.squeeze(0).narrow(0, length - count, count)).to(at::kDouble).log_softmax(-1);
}

}  // namespace

SequenceResult oracle_generate(const Transformer& model, std::span<const int64_t> prompt, const OracleOptions& options,
                               uint64_t sequence_index) {
  TORCH_CHECK(!prompt.empty(), "oracle_generate: empty prompt");
  const auto device = model.options().device();
  const auto ids = at::TensorOptions().dtype(at::kLong).device(device);
  const int64_t prompt_length = static_cast<int64_t>(prompt.size());
  KVCache cache = model.make_cache(1, prompt_length + options.max_new_tokens);
  SequenceRng rng(options.sampling.seed, sequence_index);

  SequenceResult output{.sequence_index = static_cast<int64_t>(sequence_index)};
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
  output.rounds = std::max<int64_t>(static_cast<int64_t>(output.tokens.size()) - 1, 0);
  return output;
}

GeneratedLogprobs oracle_generated_logprobs(const Transformer& model, std::span<const int64_t> prompt,
                                            std::span<const int64_t> generated, int64_t k) {
  TORCH_CHECK(!prompt.empty(), "oracle_generated_logprobs: empty prompt");
  GeneratedLogprobs out;
  if (generated.empty()) return out;
  std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  tokens.insert(tokens.end(), generated.begin(), generated.end());
  const at::Tensor logprobs = logprobs_before_last(model, tokens, static_cast<int64_t>(generated.size())).cpu();
  for (int64_t i = 0; i < logprobs.size(0); ++i) {
    out.chosen.push_back(logprobs[i][generated[static_cast<size_t>(i)]].item<double>());
    out.top.push_back(most_likely(logprobs[i], k));
  }
  return out;
}

std::vector<std::vector<TokenLogprob>> oracle_prompt_logprobs(const Transformer& model, std::span<const int64_t> prompt, int64_t k) {
  std::vector<std::vector<TokenLogprob>> out;
  if (prompt.size() < 2) return out;
  const std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  const at::Tensor logprobs = logprobs_before_last(model, tokens, static_cast<int64_t>(prompt.size()) - 1).cpu();
  for (int64_t i = 0; i < logprobs.size(0); ++i) {
    const int64_t token = prompt[i + 1];
    std::vector<TokenLogprob> entry{{token, logprobs[i][token].item<double>()}};
    for (const TokenLogprob& alternative : most_likely(logprobs[i], k)) {
      if (alternative.token_id != token) entry.push_back(alternative);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace specgate
