#include "impl/scoring/rescorer.h"

#include <ATen/ATen.h>

#include "impl/bench/conversation.h"
#include "impl/checkpoint/model_io.h"
#include "impl/model/transformer.h"
#include "impl/scoring/support_band.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {

struct Rescorer::Model {
  Transformer transformer;
  std::unique_ptr<Tokenizer> tokenizer;
  ChatTemplate chat_template;
};

Rescorer::Rescorer(const std::filesystem::path& dir, c10::ScalarType dtype, c10::Device device, ChatTemplate chat_template)
    : model_(std::make_unique<Model>(Model{load_transformer(dir, dtype, device), load_tokenizer(dir), chat_template})) {
  check_template_tokens({model_->tokenizer.get(), chat_template}, "--chat-template");
}

Rescorer::~Rescorer() = default;

int64_t Rescorer::vocab_size() const { return model_->transformer.config().vocab_size; }

ChatTemplate Rescorer::chat_template() const { return model_->chat_template; }

std::vector<int64_t> Rescorer::turn_prompt(const Question& question, size_t turn,
                                           std::span<const std::vector<int64_t>> earlier_answers) const {
  return specgate::turn_prompt({model_->tokenizer.get(), model_->chat_template}, question, turn, earlier_answers);
}

namespace {

// The checkpoint's logits after every token of `tokens`, one forward pass: [length, V].
at::Tensor all_logits(const Transformer& transformer, const std::vector<int64_t>& tokens) {
  const int64_t length = static_cast<int64_t>(tokens.size());
  const auto ids = at::TensorOptions().dtype(at::kLong).device(transformer.options().device());
  const at::Tensor hidden = transformer.forward(at::tensor(tokens, ids).unsqueeze(0), at::arange(length, ids).unsqueeze(0),
                                                at::ones({1, length}, ids.dtype(at::kBool)), nullptr);
  return transformer.logits(hidden.squeeze(0));
}

// Why `length` positions cannot be scored, or empty when they can.
std::string unfit(int64_t length, int64_t positions_available, const char* what) {
  if (length == 0) return std::string(what) + " are empty";
  if (length > positions_available)
    return std::string(what) + " take " + std::to_string(length) + " positions, the checkpoint has " +
           std::to_string(positions_available);
  return "";
}

// The checkpoint's logits before each token of `generated`, after `prompt`: [n, V], one forward
// pass; the last generated token is only scored, never fed. nullopt with `why_not` set when they
// do not fit the checkpoint's positions or `generated` is empty.
// Acceptance probabilities [N] (clamped to [0, 1]) and whether each may go the other way [N],
// brought to the host in one copy.
AcceptanceOdds odds_on_host(const at::Tensor& probability, const at::Tensor& may_grow) {
  const at::Tensor host = at::stack({probability.clamp(0.0, 1.0), may_grow.to(at::kDouble)}).cpu().contiguous();
  const double* data = host.data_ptr<double>();
  const int64_t n = host.size(1);
  AcceptanceOdds odds{{data, data + n}, {}};
  for (int64_t i = 0; i < n; ++i) odds.support_may_grow.push_back(data[n + i] != 0.0);
  return odds;
}

std::optional<at::Tensor> logits_before(const Transformer& transformer, std::span<const int64_t> prompt,
                                        std::span<const int64_t> generated, std::string& why_not) {
  std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  tokens.insert(tokens.end(), generated.begin(), generated.end());
  if (!generated.empty()) tokens.pop_back();
  const int64_t length = static_cast<int64_t>(tokens.size());
  why_not = unfit(generated.empty() ? 0 : length, transformer.config().max_position_embeddings, "the prompt and the answer");
  if (!why_not.empty()) return std::nullopt;
  const int64_t n = static_cast<int64_t>(generated.size());
  return all_logits(transformer, tokens).narrow(0, length - n, n);
}

}  // namespace

std::optional<RescoredLogprobs> Rescorer::next_token_logprobs(std::span<const int64_t> prompt,
                                                              std::span<const int64_t> prefix, int64_t reference_token,
                                                              int64_t candidate_token, std::string& why_not) const {
  std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  tokens.insert(tokens.end(), prefix.begin(), prefix.end());
  const int64_t length = static_cast<int64_t>(tokens.size());
  why_not = unfit(length, model_->transformer.config().max_position_embeddings, "the prompt and the common prefix");
  if (!why_not.empty()) return std::nullopt;
  const at::Tensor logprobs = all_logits(model_->transformer, tokens)[length - 1].to(at::kDouble).log_softmax(-1).cpu();
  return RescoredLogprobs{logprobs[reference_token].item<double>(), logprobs[candidate_token].item<double>()};
}

std::optional<TokenMasses> Rescorer::sampled_token_masses(std::span<const int64_t> prompt,
                                                          std::span<const int64_t> generated,
                                                          const SamplingParams& sampling, const SupportMargin& margin,
                                                          const Rescorer* in_engine_dtype, std::string& why_not) const {
  const std::optional<at::Tensor> logits = logits_before(model_->transformer, prompt, generated, why_not);
  if (!logits) return std::nullopt;
  const int64_t n = static_cast<int64_t>(generated.size());
  const at::Tensor probabilities = sampling_distribution(*logits, sampling);  // [n, V]
  const at::Tensor chosen = at::tensor(std::vector<int64_t>(generated.begin(), generated.end()),
                                       at::TensorOptions().dtype(at::kLong).device(probabilities.device()))
                                .unsqueeze(1);
  const at::Tensor own = probabilities.gather(1, chosen);  // [n, 1]
  // Tokens ordered from most to least likely, ties by id.
  const at::Tensor ids = at::arange(probabilities.size(1), chosen.options()).unsqueeze(0);
  const at::Tensor ahead = probabilities.gt(own).logical_or(probabilities.eq(own).logical_and(ids.lt(chosen)));
  const at::Tensor below = (probabilities * ahead).sum(1);
  const at::Tensor band = within_support_margin(*logits, probabilities, sampling, margin);  // [n, V]
  std::vector<at::Tensor> rows = {below, own.squeeze(1), band.gather(1, chosen).squeeze(1).to(at::kDouble)};
  if (in_engine_dtype) {
    const std::optional<at::Tensor> rounded = logits_before(in_engine_dtype->model_->transformer, prompt, generated, why_not);
    if (!rounded) return std::nullopt;
    const at::Tensor engine = sampling_distribution(rounded->to(probabilities.device()), sampling);
    rows.push_back((engine * band).sum(1));
  }
  const at::Tensor host = at::stack(rows).cpu().contiguous();
  const double* data = host.data_ptr<double>();
  TokenMasses masses{{data, data + n}, {data + n, data + 2 * n}, {}, {}};
  for (int64_t i = 0; i < n; ++i) masses.boundary.push_back(data[2 * n + i] != 0.0);
  if (in_engine_dtype) masses.boundary_chance.assign(data + 3 * n, data + 4 * n);
  return masses;
}

std::optional<AcceptanceOdds> Rescorer::acceptance_probabilities(const Rescorer& draft, std::span<const int64_t> prompt,
                                                                 std::span<const int64_t> generated,
                                                                 const SamplingParams& sampling, double logit_margin,
                                                                 bool not_eos, std::string& why_not) const {
  const std::optional<at::Tensor> target_logits = logits_before(model_->transformer, prompt, generated, why_not);
  if (!target_logits) return std::nullopt;
  const std::optional<at::Tensor> draft_logits = logits_before(draft.model_->transformer, prompt, generated, why_not);
  if (!draft_logits) {
    why_not = "the draft: " + why_not;
    return std::nullopt;
  }
  const at::Tensor target = target_logits->to(at::kDouble), drafted = draft_logits->to(target.device(), at::kDouble);
  const at::Tensor p = sampling_distribution(target, sampling), q = sampling_distribution(drafted, sampling);
  const at::Tensor both = at::minimum(p, q);
  at::Tensor overlap = both.sum(1);
  const std::vector<int64_t>& eos = eos_token_ids();
  if (not_eos && !eos.empty()) {
    const at::Tensor ids = at::tensor(eos, at::TensorOptions().dtype(at::kLong).device(p.device()));
    const at::Tensor going_on = 1.0 - p.index_select(1, ids).sum(1);
    overlap = at::where(going_on.gt(0.0), (overlap - both.index_select(1, ids).sum(1)) / going_on, overlap);
  }
  // The tokens outside a support moved up by the margin: the most likely of them is then raised
  // against every token ahead of it, the worst case for each warper's cut.
  const auto grows = [&](const at::Tensor& logits, const at::Tensor& shaped) {
    const at::Tensor outside = shaped.eq(0.0);
    return sampling_distribution(logits + outside.to(at::kDouble) * logit_margin, sampling).gt(0.0).logical_and(outside).any(1);
  };
  return odds_on_host(overlap, grows(target, p).logical_or(grows(drafted, q)));
}

std::optional<AcceptanceOdds> Rescorer::lookup_acceptance_probabilities(std::span<const int64_t> prompt,
                                                                        std::span<const int64_t> generated,
                                                                        std::span<const int64_t> proposed,
                                                                        const SamplingParams& sampling,
                                                                        double logit_margin, bool not_eos,
                                                                        std::string& why_not) const {
  const std::optional<at::Tensor> logits = logits_before(model_->transformer, prompt, generated, why_not);
  if (!logits) return std::nullopt;
  const at::Tensor target = logits->to(at::kDouble);
  const at::Tensor p = sampling_distribution(target, sampling);
  const at::TensorOptions ids = at::TensorOptions().dtype(at::kLong).device(p.device());
  const at::Tensor tokens = at::tensor(std::vector<int64_t>(proposed.begin(), proposed.end()), ids);
  const at::Tensor some = tokens.ge(0);
  const at::Tensor at_token = tokens.clamp_min(0).unsqueeze(1);
  at::Tensor kept = at::where(some, p.gather(1, at_token).squeeze(1), at::zeros_like(p.select(1, 0)));
  const std::vector<int64_t>& eos = eos_token_ids();
  if (not_eos && !eos.empty()) {
    const at::Tensor going_on = 1.0 - p.index_select(1, at::tensor(eos, ids)).sum(1);
    kept = at::where(going_on.gt(0.0), kept / going_on, kept);
  }
  const at::Tensor outside = p.eq(0.0);
  const at::Tensor grown = sampling_distribution(target + outside.to(at::kDouble) * logit_margin, sampling);
  const at::Tensor may_grow =
      some.logical_and(grown.gather(1, at_token).squeeze(1).gt(0.0)).logical_and(outside.gather(1, at_token).squeeze(1));
  return odds_on_host(kept, may_grow);
}

const std::vector<int64_t>& Rescorer::eos_token_ids() const { return model_->transformer.config().eos_token_ids; }

std::optional<GreedyChoices> Rescorer::greedy_choices(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                                     std::string& why_not) const {
  const std::optional<at::Tensor> logits = logits_before(model_->transformer, prompt, generated, why_not);
  if (!logits) return std::nullopt;
  const int64_t n = static_cast<int64_t>(generated.size());
  const at::Tensor logprobs = logits->to(at::kDouble).log_softmax(-1);
  // argmax returns the first of equal maxima: the lowest id.
  const at::Tensor most_likely = logprobs.argmax(1).cpu().contiguous();
  const at::Tensor top_two = std::get<0>(logprobs.topk(std::min<int64_t>(2, logprobs.size(1)), 1));
  const at::Tensor chosen = at::tensor(std::vector<int64_t>(generated.begin(), generated.end()),
                                       at::TensorOptions().dtype(at::kLong).device(logprobs.device()))
                                .unsqueeze(1);
  const at::Tensor best = top_two.select(1, 0);
  const at::Tensor runner_up = top_two.size(1) > 1 ? top_two.select(1, 1) : best - INFINITY;
  const at::Tensor leads =
      at::stack({best - logprobs.gather(1, chosen).squeeze(1), best - runner_up}).cpu().contiguous();
  const int64_t* ids = most_likely.data_ptr<int64_t>();
  const double* lead = leads.data_ptr<double>();
  return GreedyChoices{{ids, ids + n}, {lead, lead + n}, {lead + n, lead + 2 * n}};
}

std::optional<std::vector<double>> Rescorer::generated_logprobs(std::span<const int64_t> prompt,
                                                                std::span<const int64_t> generated,
                                                                std::string& why_not) const {
  const std::optional<at::Tensor> logits = logits_before(model_->transformer, prompt, generated, why_not);
  if (!logits) return std::nullopt;
  const auto ids = at::TensorOptions().dtype(at::kLong).device(logits->device());
  const at::Tensor chosen = at::tensor(std::vector<int64_t>(generated.begin(), generated.end()), ids).unsqueeze(1);
  const at::Tensor logprobs = logits->to(at::kDouble).log_softmax(-1).gather(1, chosen).squeeze(1).cpu().contiguous();
  const double* data = logprobs.data_ptr<double>();
  return std::vector<double>(data, data + logprobs.size(0));
}

}  // namespace specgate
