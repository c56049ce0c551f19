#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "impl/decoding/decode_types.h"
#include "impl/decoding/exspec.h"
#include "impl/model/transformer.h"
#include "property_tests/properties/decode_case.h"

namespace specgate::props {

struct DecodeRun {
  std::vector<SequenceResult> results;
  DecodeStats stats;
  ExspecStats exspec_stats;
};

// Everything a property needs to run one case: its models, the greedy oracle's runs (computed
// once per prompt) and the decoder the case names.
class CaseContext {
 public:
  explicit CaseContext(const DecodeCase& decode_case);

  const DecodeCase& decode_case() const { return case_; }
  // The greedy oracle's free run of `prompt`, max_new_tokens + K + 1 tokens, no EOS: what
  // scripted drafts copy, and what the case's EOS is read from.
  const std::vector<int64_t>& continuation(const std::vector<int64_t>& prompt);
  // The greedy oracle's output for `prompt` under the case's EOS and max_new_tokens.
  std::vector<int64_t> oracle_output(const std::vector<int64_t>& prompt);
  const std::vector<int64_t>& eos_ids() const { return eos_ids_; }
  bool is_eos(int64_t token) const;

  DecodeOptions options(const FaultSet& faults, bool check_invariants) const;
  // Runs the case's decoder (EQSPEC or EXSPEC) with a fresh drafter.
  DecodeRun run(std::span<const SequenceRequest> requests, const FaultSet& faults, bool check_invariants = false);
  // Runs it with I1-I4 checked, cancelling each sequence of `cancel_at` (sequence index -> step)
  // just before that step (0: before the first). Returns the results in the order they
  // finished, each with its step.
  std::vector<std::pair<int64_t, SequenceResult>> run_cancelling(std::span<const SequenceRequest> requests,
                                                                 const FaultSet& faults,
                                                                 const std::map<int64_t, int64_t>& cancel_at);

 private:
  struct CaseDecoder;
  std::unique_ptr<CaseDecoder> make_decoder(std::span<const SequenceRequest> requests, const FaultSet& faults,
                                            bool check_invariants);

  DecodeCase case_;
  Transformer target_;
  std::optional<Transformer> draft_;
  std::map<std::vector<int64_t>, std::vector<int64_t>> continuations_;
  std::vector<int64_t> eos_ids_;
};

// Sequence i of the result is prompts[i], named i (its script row and its random stream).
std::vector<SequenceRequest> requests_for(const std::vector<std::vector<int64_t>>& prompts);

}  // namespace specgate::props
