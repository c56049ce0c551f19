#include "impl/scoring/rescorer.h"

#include <ATen/ATen.h>

#include "impl/bench/conversation.h"
#include "impl/checkpoint/model_io.h"
#include "impl/model/transformer.h"
#include "impl/scoring/pit_shift.h"
#include "impl/scoring/support_band.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {

namespace {

// A local checkpoint's logits, one forward pass, every entry known.
class CheckpointLogits final : public LogitsSource {
 public:
  explicit CheckpointLogits(Transformer transformer) : transformer_(std::move(transformer)) {}

  int64_t vocab_size() const override { return transformer_.config().vocab_size; }
  const std::vector<int64_t>& eos_token_ids() const override { return transformer_.config().eos_token_ids; }
  std::optional<KnownLogits> logits_before(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                           std::string& why_not) const override;

 private:
  Transformer transformer_;
};

}  // namespace

Rescorer::Rescorer(const std::filesystem::path& dir, c10::ScalarType dtype, c10::Device device, ChatTemplate chat_template)
    : source_(std::make_unique<CheckpointLogits>(load_transformer(dir, dtype, device))),
      tokenizer_(load_tokenizer(dir)),
      chat_template_(chat_template) {
  check_template_tokens({tokenizer_.get(), chat_template}, "--chat-template");
}

Rescorer::Rescorer(std::unique_ptr<LogitsSource> source) : source_(std::move(source)) {}

Rescorer::~Rescorer() = default;

int64_t Rescorer::vocab_size() const { return source_->vocab_size(); }

bool Rescorer::builds_prompts() const { return tokenizer_ != nullptr; }

std::vector<int64_t> Rescorer::turn_prompt(const Question& question, size_t turn,
                                           std::span<const std::vector<int64_t>> earlier_answers) const {
  return specgate::turn_prompt({tokenizer_.get(), chat_template_}, question, turn, earlier_answers);
}

void Rescorer::prepare(std::span<const std::vector<int64_t>> sequences) const { source_->prepare(sequences); }

namespace {

// The checkpoint's logits after every token of `tokens`, one forward pass: [length, V].
at::Tensor all_logits(const Transformer& transformer, const std::vector<int64_t>& tokens) {
  const int64_t length = static_cast<int64_t>(tokens.size());
  const auto ids = at::TensorOptions().dtype(at::kLong).device(transformer.options().device());
  const at::Tensor hidden = transformer.forward(at::tensor(tokens, ids).unsqueeze(0), at::arange(length, ids).unsqueeze(0),
                                                at::ones({1, length}, ids.dtype(at::kBool)), nullptr);
  return transformer.logits(hidden.squeeze(0));
}

// Where two fillings' figures count as one: rounding of the same sums in another order.
constexpr double kAgreement = 1e-12;

// The first filling's figures [n, F] and whether every filling gives the same at each position
// [n]: figures(f) -> [n, F] from filling f of `count`.
struct AgreedFigures {
  at::Tensor first, exact;
};
template <class Figures>
AgreedFigures agreed_figures(size_t count, const Figures& figures) {
  const at::Tensor first = figures(size_t{0}).to(at::kDouble);
  at::Tensor exact = at::ones({first.size(0)}, first.options().dtype(at::kBool));
  for (size_t f = 1; f < count; ++f) {
    const at::Tensor other = figures(f).to(at::kDouble);
    exact = exact.logical_and((first - other).abs().le(kAgreement).logical_or(first.eq(other)).all(1));
  }
  return {first, exact};
}
template <class Figures>
AgreedFigures agreed_figures(const KnownLogits& known, const Figures& figures) {
  return agreed_figures(known.fillings.size(), [&](size_t f) { return figures(known.fillings[f]); });
}

// Whether a distribution shaped from each filling gives no mass to the entries filled in, at
// every position: [n].
at::Tensor support_seen(const KnownLogits& known, const SamplingParams& sampling) {
  const int64_t n = known.fillings.front().size(0);
  at::Tensor seen = at::ones({n}, known.fillings.front().options().dtype(at::kBool));
  if (!known.unseen.defined()) return seen;
  for (const at::Tensor& filling : known.fillings)
    seen = seen.logical_and(sampling_distribution(filling.to(at::kDouble), sampling).mul(known.unseen).sum(1).eq(0.0));
  return seen;
}

std::string unknown_positions(const at::Tensor& exact, const char* what) {
  const int64_t unknown = exact.logical_not().sum().item<int64_t>();
  return std::to_string(unknown) + " of " + std::to_string(exact.size(0)) + " positions' " + what +
         " depend on log-probabilities past the reference engine's top k (ask more with --rescore-top-k, or "
         "re-score with the checkpoint)";
}

std::vector<bool> flags_on_host(const at::Tensor& flags) {
  const at::Tensor host = flags.to(at::kBool).cpu().contiguous();
  return std::vector<bool>(host.data_ptr<bool>(), host.data_ptr<bool>() + host.numel());
}

// Why `length` positions cannot be scored, or empty when they can.
std::string unfit(int64_t length, int64_t positions_available, const char* what) {
  if (length == 0) return std::string(what) + " are empty";
  if (length > positions_available)
    return std::string(what) + " take " + std::to_string(length) + " positions, the checkpoint has " +
           std::to_string(positions_available);
  return "";
}

// Acceptance probabilities [N] (clamped to [0, 1]), whether each may go the other way [N], and
// where given the residual's figures [N, 2] (below, own), brought to the host in one copy.
AcceptanceOdds odds_on_host(const at::Tensor& probability, const at::Tensor& may_grow,
                            const at::Tensor& residual = at::Tensor()) {
  std::vector<at::Tensor> rows = {probability.clamp(0.0, 1.0), may_grow.to(at::kDouble)};
  if (residual.defined()) rows.insert(rows.end(), {residual.select(1, 0), residual.select(1, 1)});
  const at::Tensor host = at::stack(rows).cpu().contiguous();
  const double* data = host.data_ptr<double>();
  const int64_t n = host.size(1);
  AcceptanceOdds odds{{data, data + n}, {}};
  for (int64_t i = 0; i < n; ++i) odds.support_may_grow.push_back(data[n + i] != 0.0);
  if (residual.defined()) {
    odds.residual_below.assign(data + 2 * n, data + 3 * n);
    odds.residual_own.assign(data + 3 * n, data + 4 * n);
  }
  return odds;
}

at::Tensor id_column(std::span<const int64_t> tokens, const at::Tensor& like) {
  return at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()),
                    at::TensorOptions().dtype(at::kLong).device(like.device()))
      .unsqueeze(1);
}

// The mass of the tokens ahead of each chosen token [n, 1] in `probabilities` [n, V], most likely
// first, ties by id, and its own: [n, 2].
at::Tensor below_and_own(const at::Tensor& probabilities, const at::Tensor& chosen) {
  const at::Tensor own = probabilities.gather(1, chosen);  // [n, 1]
  const at::Tensor ids = at::arange(probabilities.size(1), chosen.options()).unsqueeze(0);
  const at::Tensor ahead = probabilities.gt(own).logical_or(probabilities.eq(own).logical_and(ids.lt(chosen)));
  return at::stack({(probabilities * ahead).sum(1), own.squeeze(1)}, 1);
}

// The distribution a token after a rejected draft is drawn from: max(p - q, 0) normalised, given
// that it is none of `eos` when given; rows where p <= q everywhere are 0: [n, V].
at::Tensor residual_of(const at::Tensor& p, const at::Tensor& q, const std::vector<int64_t>& eos) {
  at::Tensor residual = (p - q).clamp_min(0.0);
  if (!eos.empty()) residual.index_fill_(1, at::tensor(eos, at::TensorOptions().dtype(at::kLong).device(p.device())), 0.0);
  const at::Tensor mass = residual.sum(1, /*keepdim=*/true);
  return at::where(mass.gt(0.0), residual / mass.clamp_min(1e-300), at::zeros_like(residual));
}

// Below, own and boundary (TokenMasses) of each token of `generated` under logits [n, V], and
// where `engine` (the shaped distribution [n, V] of the checkpoint in the engine's dtype) is
// defined, the mass it gives the tokens on the boundary: [n, 3] or [n, 4].
at::Tensor token_masses(const at::Tensor& logits, std::span<const int64_t> generated, const SamplingParams& sampling,
                        const SupportMargin& margin, const at::Tensor& engine) {
  const at::Tensor probabilities = sampling_distribution(logits, sampling);  // [n, V]
  const at::Tensor chosen = id_column(generated, probabilities);
  const at::Tensor masses = below_and_own(probabilities, chosen);
  const at::Tensor band = within_support_margin(logits, probabilities, sampling, margin);  // [n, V]
  std::vector<at::Tensor> rows = {masses.select(1, 0), masses.select(1, 1),
                                  band.gather(1, chosen).squeeze(1).to(at::kDouble)};
  if (engine.defined()) rows.push_back((engine.to(probabilities.device()) * band).sum(1));
  return at::stack(rows, 1);
}

// The probability speculative sampling accepts a draw of q's, p and q from these logits [n, V],
// whether either support would take in another token under the margin, and the residual's
// below and own of each token of `generated` (as if drawn after a rejected draft): [n, 4].
at::Tensor drawn_acceptance(const at::Tensor& target_logits, const at::Tensor& draft_logits,
                            std::span<const int64_t> generated, const SamplingParams& sampling, double logit_margin,
                            const std::vector<int64_t>& eos) {
  const at::Tensor target = target_logits.to(at::kDouble), drafted = draft_logits.to(target.device(), at::kDouble);
  const at::Tensor p = sampling_distribution(target, sampling), q = sampling_distribution(drafted, sampling);
  const at::Tensor both = at::minimum(p, q);
  at::Tensor overlap = both.sum(1);
  if (!eos.empty()) {
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
  const at::Tensor residual = below_and_own(residual_of(p, q, eos), id_column(generated, p));
  return at::cat({at::stack({overlap, grows(target, p).logical_or(grows(drafted, q)).to(at::kDouble)}, 1), residual}, 1);
}

// The probability speculative sampling keeps each proposed token (negative: none), and whether
// a margin would take it into the support: [n, 2].
at::Tensor proposal_acceptance(const at::Tensor& logits, std::span<const int64_t> proposed, const SamplingParams& sampling,
                               double logit_margin, const std::vector<int64_t>& eos) {
  const at::Tensor target = logits.to(at::kDouble);
  const at::Tensor p = sampling_distribution(target, sampling);
  const at::TensorOptions ids = at::TensorOptions().dtype(at::kLong).device(p.device());
  const at::Tensor tokens = at::tensor(std::vector<int64_t>(proposed.begin(), proposed.end()), ids);
  const at::Tensor some = tokens.ge(0);
  const at::Tensor at_token = tokens.clamp_min(0).unsqueeze(1);
  at::Tensor kept = at::where(some, p.gather(1, at_token).squeeze(1), at::zeros_like(p.select(1, 0)));
  if (!eos.empty()) {
    const at::Tensor going_on = 1.0 - p.index_select(1, at::tensor(eos, ids)).sum(1);
    kept = at::where(going_on.gt(0.0), kept / going_on, kept);
  }
  const at::Tensor outside = p.eq(0.0);
  const at::Tensor grown = sampling_distribution(target + outside.to(at::kDouble) * logit_margin, sampling);
  const at::Tensor may_grow =
      some.logical_and(grown.gather(1, at_token).squeeze(1).gt(0.0)).logical_and(outside.gather(1, at_token).squeeze(1));
  return at::stack({kept, may_grow.to(at::kDouble)}, 1);
}

// Each token's log-probability (unshaped) under logits [n, V]: [n].
at::Tensor chosen_logprobs(const at::Tensor& logits, std::span<const int64_t> generated) {
  return logits.to(at::kDouble).log_softmax(-1).gather(1, id_column(generated, logits)).squeeze(1);
}

// The most likely token, its lead over the answer's token and over the runner-up: [n, 3].
at::Tensor greedy_figures(const at::Tensor& logits, std::span<const int64_t> generated) {
  const at::Tensor logprobs = logits.to(at::kDouble).log_softmax(-1);
  // argmax returns the first of equal maxima: the lowest id.
  const at::Tensor most_likely = logprobs.argmax(1).to(at::kDouble);
  const at::Tensor top_two = std::get<0>(logprobs.topk(std::min<int64_t>(2, logprobs.size(1)), 1));
  const at::Tensor best = top_two.select(1, 0);
  const at::Tensor runner_up = top_two.size(1) > 1 ? top_two.select(1, 1) : best - INFINITY;
  return at::stack({most_likely, best - logprobs.gather(1, id_column(generated, logprobs)).squeeze(1), best - runner_up}, 1);
}

// Figures [n, F] of the first filling on the host, row-major.
std::vector<double> rows_on_host(const at::Tensor& figures) {
  const at::Tensor host = figures.to(at::kDouble).cpu().contiguous();
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
}

}  // namespace

std::optional<KnownLogits> CheckpointLogits::logits_before(std::span<const int64_t> prompt,
                                                          std::span<const int64_t> generated,
                                                          std::string& why_not) const {
  std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  tokens.insert(tokens.end(), generated.begin(), generated.end());
  if (!generated.empty()) tokens.pop_back();
  const int64_t length = static_cast<int64_t>(tokens.size());
  why_not = unfit(generated.empty() ? 0 : length, transformer_.config().max_position_embeddings, "the prompt and the answer");
  if (!why_not.empty()) return std::nullopt;
  const int64_t n = static_cast<int64_t>(generated.size());
  return KnownLogits{{all_logits(transformer_, tokens).narrow(0, length - n, n)}, {}};
}

std::optional<RescoredLogprobs> Rescorer::next_token_logprobs(std::span<const int64_t> prompt,
                                                              std::span<const int64_t> prefix, int64_t reference_token,
                                                              int64_t candidate_token, std::string& why_not) const {
  std::vector<int64_t> context(prompt.begin(), prompt.end());
  context.insert(context.end(), prefix.begin(), prefix.end());
  if (context.empty()) {
    why_not = "the prompt and the common prefix are empty";
    return std::nullopt;
  }
  // The log-probability of `token` after the context, from logits there scored as `scored`'s
  // next token; nullopt where the source's top k does not tell it.
  const auto logprob_of = [&](int64_t token, const KnownLogits& scored) -> std::optional<double> {
    const AgreedFigures logprob = agreed_figures(
        scored, [&](const at::Tensor& filling) { return chosen_logprobs(filling, std::span(&token, 1)).unsqueeze(1); });
    if (!logprob.exact.item<bool>()) return std::nullopt;
    return logprob.first.item<double>();
  };
  const std::optional<KnownLogits> as_reference = source_->logits_before(context, std::span(&reference_token, 1), why_not);
  if (!as_reference) return std::nullopt;
  const std::optional<double> reference = logprob_of(reference_token, *as_reference);
  std::optional<double> candidate = logprob_of(candidate_token, *as_reference);
  if (!candidate) {
    const std::optional<KnownLogits> as_candidate = source_->logits_before(context, std::span(&candidate_token, 1), why_not);
    if (!as_candidate) return std::nullopt;
    candidate = logprob_of(candidate_token, *as_candidate);
  }
  if (!reference || !candidate) {
    why_not = "the reference engine did not return the log-probability of a token it was sent";
    return std::nullopt;
  }
  return RescoredLogprobs{*reference, *candidate};
}

std::optional<TokenMasses> Rescorer::sampled_token_masses(std::span<const int64_t> prompt,
                                                          std::span<const int64_t> generated,
                                                          const SamplingParams& sampling, const SupportMargin& margin,
                                                          const Rescorer* in_engine_dtype, std::string& why_not) const {
  const std::optional<KnownLogits> logits = source_->logits_before(prompt, generated, why_not);
  if (!logits) return std::nullopt;
  at::Tensor engine;
  if (in_engine_dtype) {
    const std::optional<KnownLogits> rounded = in_engine_dtype->source_->logits_before(prompt, generated, why_not);
    if (!rounded) return std::nullopt;
    engine = sampling_distribution(rounded->fillings.front(), sampling);
  }
  const AgreedFigures figures = agreed_figures(
      *logits, [&](const at::Tensor& filling) { return token_masses(filling, generated, sampling, margin, engine); });
  const size_t columns = static_cast<size_t>(figures.first.size(1));
  const std::vector<double> rows = rows_on_host(figures.first);
  TokenMasses masses;
  for (size_t i = 0; i < generated.size(); ++i) {
    masses.below.push_back(rows[columns * i]);
    masses.own.push_back(rows[columns * i + 1]);
    masses.boundary.push_back(rows[columns * i + 2] != 0.0);
    if (engine.defined()) masses.boundary_chance.push_back(rows[columns * i + 3]);
  }
  if (engine.defined()) {
    const std::vector<double> shift =
        rows_on_host(pit_law_shift(sampling_distribution(logits->fillings.front(), sampling), engine));
    for (auto row = shift.begin(); row != shift.end(); row += kPitShiftPoints)
      masses.pit_shift.emplace_back(row, row + kPitShiftPoints);
  }
  const at::Tensor exact =
      logits->ranked_past.defined() ? figures.exact.logical_and(logits->ranked_past.logical_not()) : figures.exact;
  masses.exact = flags_on_host(exact);
  return masses;
}

std::optional<AcceptanceOdds> Rescorer::acceptance_probabilities(const Rescorer& draft, std::span<const int64_t> prompt,
                                                                 std::span<const int64_t> generated,
                                                                 const SamplingParams& sampling, double logit_margin,
                                                                 bool not_eos, const Rescorer* target_in_engine_dtype,
                                                                 const Rescorer* draft_in_engine_dtype,
                                                                 std::string& why_not) const {
  const std::optional<KnownLogits> target = source_->logits_before(prompt, generated, why_not);
  if (!target) return std::nullopt;
  const std::optional<KnownLogits> drafted = draft.source_->logits_before(prompt, generated, why_not);
  if (!drafted) {
    why_not = "the draft: " + why_not;
    return std::nullopt;
  }
  const std::vector<int64_t> eos = not_eos ? eos_token_ids() : std::vector<int64_t>{};
  // Both supports inside what the sources returned, and the same odds from the fillings paired.
  const at::Tensor seen =
      support_seen(*target, sampling).logical_and(support_seen(*drafted, sampling).to(target->fillings.front().device()));
  const size_t pairs = std::max(target->fillings.size(), drafted->fillings.size());
  const auto filling = [](const KnownLogits& known, size_t f) { return known.fillings[std::min(f, known.fillings.size() - 1)]; };
  const AgreedFigures odds = agreed_figures(pairs, [&](size_t f) {
    return drawn_acceptance(filling(*target, f), filling(*drafted, f), generated, sampling, logit_margin, eos);
  });
  const at::Tensor exact = seen.logical_and(odds.exact);
  if (!exact.all().item<bool>()) {
    why_not = unknown_positions(exact, "shaped supports");
    return std::nullopt;
  }
  AcceptanceOdds result = odds_on_host(odds.first.select(1, 0), odds.first.select(1, 1).ne(0.0), odds.first.narrow(1, 2, 2));
  if (target_in_engine_dtype == nullptr) return result;

  const std::optional<KnownLogits> rounded_target = target_in_engine_dtype->source_->logits_before(prompt, generated, why_not);
  if (!rounded_target) return std::nullopt;
  const std::optional<KnownLogits> rounded_draft = draft_in_engine_dtype->source_->logits_before(prompt, generated, why_not);
  if (!rounded_draft) return std::nullopt;
  const at::Tensor rounded_figures = drawn_acceptance(rounded_target->fillings.front(), rounded_draft->fillings.front(),
                                                      generated, sampling, logit_margin, eos);
  result.probability_in_engine_dtype = rows_on_host(rounded_figures.select(1, 0).clamp(0.0, 1.0));
  const auto shaped = [&](const KnownLogits& known, const at::Tensor& on) {
    return sampling_distribution(known.fillings.front().to(on.device(), at::kDouble), sampling);
  };
  const at::Tensor p = shaped(*target, odds.first), q = shaped(*drafted, odds.first);
  const at::Tensor shift = pit_law_shift(residual_of(p, q, eos),
                                         residual_of(shaped(*rounded_target, p), shaped(*rounded_draft, p), eos));
  const std::vector<double> rows = rows_on_host(shift);
  for (auto row = rows.begin(); row != rows.end(); row += kPitShiftPoints)
    result.residual_pit_shift.emplace_back(row, row + kPitShiftPoints);
  return result;
}

std::optional<AcceptanceOdds> Rescorer::lookup_acceptance_probabilities(std::span<const int64_t> prompt,
                                                                        std::span<const int64_t> generated,
                                                                        std::span<const int64_t> proposed,
                                                                        const SamplingParams& sampling,
                                                                        double logit_margin, bool not_eos,
                                                                        std::string& why_not) const {
  const std::optional<KnownLogits> logits = source_->logits_before(prompt, generated, why_not);
  if (!logits) return std::nullopt;
  const std::vector<int64_t> eos = not_eos ? eos_token_ids() : std::vector<int64_t>{};
  const AgreedFigures odds = agreed_figures(
      *logits, [&](const at::Tensor& filling) { return proposal_acceptance(filling, proposed, sampling, logit_margin, eos); });
  if (!odds.exact.all().item<bool>()) {
    why_not = unknown_positions(odds.exact, "acceptance probabilities");
    return std::nullopt;
  }
  return odds_on_host(odds.first.select(1, 0), odds.first.select(1, 1).ne(0.0));
}

const std::vector<int64_t>& Rescorer::eos_token_ids() const { return source_->eos_token_ids(); }

std::optional<GreedyChoices> Rescorer::greedy_choices(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                                     std::string& why_not) const {
  const std::optional<KnownLogits> logits = source_->logits_before(prompt, generated, why_not);
  if (!logits) return std::nullopt;
  const AgreedFigures figures = agreed_figures(*logits, [&](const at::Tensor& filling) { return greedy_figures(filling, generated); });
  if (!figures.exact.all().item<bool>()) {
    why_not = unknown_positions(figures.exact, "most likely tokens");
    return std::nullopt;
  }
  const std::vector<double> rows = rows_on_host(figures.first);
  GreedyChoices choices;
  for (size_t i = 0; i < generated.size(); ++i) {
    choices.most_likely.push_back(static_cast<int64_t>(rows[3 * i]));
    choices.lead_over_answer.push_back(rows[3 * i + 1]);
    choices.lead_over_runner_up.push_back(rows[3 * i + 2]);
  }
  return choices;
}

std::optional<std::vector<double>> Rescorer::generated_logprobs(std::span<const int64_t> prompt,
                                                                std::span<const int64_t> generated,
                                                                std::string& why_not) const {
  const std::optional<KnownLogits> logits = source_->logits_before(prompt, generated, why_not);
  if (!logits) return std::nullopt;
  const AgreedFigures logprobs =
      agreed_figures(*logits, [&](const at::Tensor& filling) { return chosen_logprobs(filling, generated).unsqueeze(1); });
  if (!logprobs.exact.all().item<bool>()) {
    why_not = unknown_positions(logprobs.exact, "log-probabilities");
    return std::nullopt;
  }
  return rows_on_host(logprobs.first);
}

}  // namespace specgate
