#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace specgate {

// What a source knows of the target's next-token log-probabilities before each token of an
// answer, [n, V] each. A source that computes them all gives one tensor. A source that returns
// only the top k of each position (an engine's prompt log-probabilities) gives two fillings of
// the entries it did not return, at the two extremes the mass they share allows: every unseen
// entry as likely as the k-th (as many as that mass holds, the highest ids first, so that a tie
// orders the returned token first, as the engine's top k did), and that mass spread evenly over
// them. A figure computed from the fillings that agrees between both is one
// the unseen entries cannot change; one that differs is unknown.
// The fillings bound the normaliser and what lies ahead of a returned token, but not the mass
// between an answer's token ranked past the k and the k-th: where that could hold a token,
// `ranked_past` marks the position, and nothing that turns on the tokens ahead of it is known.
struct KnownLogits {
  std::vector<at::Tensor> fillings;
  at::Tensor unseen;       // [n, V] bool: the entries filled in; undefined when every entry is known
  at::Tensor ranked_past;  // [n] bool; undefined when every entry is known
};

// Where a Rescorer takes the target's logits from: its own forward pass over a local
// checkpoint, or the reference engine's prompt log-probabilities.
class LogitsSource {
 public:
  virtual ~LogitsSource() = default;

  virtual int64_t vocab_size() const = 0;
  // The ids that end generation.
  virtual const std::vector<int64_t>& eos_token_ids() const = 0;

  // Before each token of `generated`, after `prompt` and the tokens before it; the last generated
  // token is only scored. nullopt with `why_not` set when they do not fit the model's positions or
  // `generated` is empty. Token ids must be below vocab_size().
  virtual std::optional<KnownLogits> logits_before(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                                   std::string& why_not) const = 0;

  // The token sequences (prompt and answer together) logits_before() is about to be asked for,
  // one by one: a source that answers over the network fetches them all at once.
  virtual void prepare(std::span<const std::vector<int64_t>> /*sequences*/) const {}
};

}  // namespace specgate
