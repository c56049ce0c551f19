#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "impl/bench/chat_template.h"
#include "impl/bench/question.h"
#include "impl/sampling/sampling.h"
#include "impl/scoring/attribution.h"
#include "impl/scoring/logits_source.h"
#include "impl/scoring/support_margin.h"

namespace specgate {

class Tokenizer;

// The target that re-scores answers from any engine, log-softmax in float64: a local checkpoint
// (one forward pass over prompt + answer) or the reference engine's prompt log-probabilities
// (LogitsSource). What the second's top k leaves unknown is never guessed: a token mass is marked
// inexact, and the other figures are refused with `why_not` saying so.
// Where each generated token of an answer falls in the distribution it should have been drawn
// from, its tokens ordered from the most likely to the least (ties by id): the mass of the
// tokens before it, and its own (0 for a token outside the support). The order makes the
// randomised PIT of a draw that favours likely tokens (a draft accepted too often, greedy
// verification, a temperature too low) small in every context alike, where id order would
// scatter that skew over [0, 1].
// A token outside the support that a warper would take in were its input off by the support
// margin (within_support_margin) sits on the support's boundary: an engine whose logits differ
// from the re-scorer's by rounding can draw it (boundary is false for tokens inside the support).
// exact: the figures do not depend on log-probabilities the source left unknown (always so for a
// local checkpoint). boundary_chance: where the same checkpoint in the engine's dtype re-scores
// too, the mass its shaped distribution gives the tokens on the boundary, the chance that a
// correct engine of that dtype draws one there, and pit_shift, how far such an engine moves the
// law of each token's PIT (pit_law_shift, kPitShiftPoints values a token); both empty otherwise.
struct TokenMasses {
  std::vector<double> below, own;
  std::vector<bool> boundary, exact;
  std::vector<double> boundary_chance;
  std::vector<std::vector<double>> pit_shift;
};

// Whether speculative sampling accepts the draft at each position of an answer: the
// probability, and whether either model's shaped support would take in another token if the
// tokens outside it moved up by the margin (then an acceptance probability of 0 or 1 is only so
// up to the engine's rounding).
// A token drawn after a rejected draft comes from the residual max(p - q, 0), normalised (given
// that it is no EOS id where the odds are): residual_below and residual_own place each position's
// token in it as TokenMasses does in p (both 0 where p <= q everywhere). With the checkpoints in
// the engine's dtype too: their acceptance probabilities, and how far an engine of that dtype
// moves the law of the residual's PIT at each position (pit_law_shift, kPitShiftPoints values).
struct AcceptanceOdds {
  std::vector<double> probability;
  std::vector<bool> support_may_grow;
  std::vector<double> residual_below, residual_own;
  std::vector<double> probability_in_engine_dtype;
  std::vector<std::vector<double>> residual_pit_shift;
};

// What a greedy drafter proposes at each position of an answer, and how firmly: the most likely
// token (lowest id among equals), its log-probability's lead over the answer's token there (0
// where it is the answer's token), and over the runner-up.
struct GreedyChoices {
  std::vector<int64_t> most_likely;
  std::vector<double> lead_over_answer, lead_over_runner_up;
};

class Rescorer {
 public:
  // Loads weights and tokenizer; InputError naming the folder when either is unusable.
  Rescorer(const std::filesystem::path& dir, c10::ScalarType dtype, c10::Device device, ChatTemplate chat_template);
  // Logits from elsewhere, and no tokenizer: prompts are the answers' prompt_token_ids.
  explicit Rescorer(std::unique_ptr<LogitsSource> source);
  ~Rescorer();
  Rescorer(const Rescorer&) = delete;
  Rescorer& operator=(const Rescorer&) = delete;

  int64_t vocab_size() const;

  // Whether turn_prompt() can build prompts: a local checkpoint has a tokenizer.
  bool builds_prompts() const;
  // The prompt of `turn` as `conformance generate` builds it (turn_prompt()) with the
  // checkpoint's tokenizer and this template; `earlier_answers` are the generated ids of the
  // turns before it. Only where builds_prompts().
  std::vector<int64_t> turn_prompt(const Question& question, size_t turn,
                                   std::span<const std::vector<int64_t>> earlier_answers) const;

  // The token sequences (prompt and answer) about to be re-scored one by one (LogitsSource::prepare).
  void prepare(std::span<const std::vector<int64_t>> sequences) const;

  // The log-probabilities of `reference_token` and `candidate_token` as the next token after
  // `prompt` and `prefix`; nullopt with `why_not` set when that does not fit the model's
  // positions. Token ids must be below vocab_size(). From the reference engine: the
  // log-probabilities of prompt + prefix + each token, the second only where the first's top k
  // does not hold the candidate.
  std::optional<RescoredLogprobs> next_token_logprobs(std::span<const int64_t> prompt, std::span<const int64_t> prefix,
                                                      int64_t reference_token, int64_t candidate_token,
                                                      std::string& why_not) const;

  // The masses of every token of `generated` in the target's next-token distribution after
  // `prompt` and the tokens before it, shaped by `sampling` (sampling_distribution, float64):
  // one forward pass, and one of `in_engine_dtype` (this checkpoint loaded in the engine's
  // dtype) when given; a token outside the support is on its boundary when within `margin`
  // (TokenMasses). nullopt with `why_not` set when prompt and answer do not fit the model's
  // positions or are empty; token ids must be below vocab_size().
  std::optional<TokenMasses> sampled_token_masses(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                                  const SamplingParams& sampling, const SupportMargin& margin,
                                                  const Rescorer* in_engine_dtype, std::string& why_not) const;

  // Position i of `generated`: the probability that speculative sampling accepts a token `draft`
  // draws after `prompt` and generated[:i], sum over x of min(p(x), q(x)), p this checkpoint's
  // and q the draft's distribution there, both shaped by `sampling`; with `not_eos`, given that
  // the token there is none of eos_token_ids() (the answer went on past it):
  // (sum min(p, q) - sum over EOS of min(p, q)) / (1 - p(EOS)). One forward pass of each, and
  // one of each checkpoint in the engine's dtype where both are given (AcceptanceOdds).
  // nullopt with `why_not` set as sampled_token_masses, or when the source's top k leaves either
  // shaped support unknown at some position.
  std::optional<AcceptanceOdds> acceptance_probabilities(const Rescorer& draft, std::span<const int64_t> prompt,
                                                         std::span<const int64_t> generated, const SamplingParams& sampling,
                                                         double logit_margin, bool not_eos,
                                                         const Rescorer* target_in_engine_dtype,
                                                         const Rescorer* draft_in_engine_dtype, std::string& why_not) const;

  // Position i of `generated`: the probability that speculative sampling keeps `proposed[i]`, a
  // token a drafter that draws nothing (n-gram lookup) proposed there after `prompt` and
  // generated[:i]: p(proposed[i]) with p this checkpoint's distribution shaped by `sampling`
  // (0 where proposed[i] is negative, no proposal); with `not_eos`, given that the token there is
  // none of eos_token_ids(): p(x) / (1 - p(EOS)). support_may_grow: the proposed token is
  // outside the support but a margin would take it in. One forward pass. nullopt as
  // acceptance_probabilities.
  std::optional<AcceptanceOdds> lookup_acceptance_probabilities(std::span<const int64_t> prompt,
                                                                std::span<const int64_t> generated,
                                                                std::span<const int64_t> proposed,
                                                                const SamplingParams& sampling, double logit_margin,
                                                                bool not_eos, std::string& why_not) const;

  // The ids that end generation (generation_config.json's eos_token_id, else config.json's).
  const std::vector<int64_t>& eos_token_ids() const;

  // Position i of `generated`: its log-probability under the checkpoint (unshaped) after
  // `prompt` and generated[:i]. One forward pass; nullopt with `why_not` set as
  // sampled_token_masses.
  std::optional<std::vector<double>> generated_logprobs(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                                        std::string& why_not) const;

  // Position i of `generated`: the most likely next token after `prompt` and generated[:i] and
  // its leads (GreedyChoices); what a greedy drafter proposes there. One forward pass. From the
  // reference engine this needs its top 2.
  std::optional<GreedyChoices> greedy_choices(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                              std::string& why_not) const;

 private:
  std::unique_ptr<LogitsSource> source_;
  std::unique_ptr<Tokenizer> tokenizer_;  // null for logits from elsewhere
  ChatTemplate chat_template_ = ChatTemplate::kRaw;
};

}  // namespace specgate
