#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "impl/decoding/batch_decoder.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/drafter.h"
#include "impl/decoding/tree_drafter.h"
#include "impl/model/transformer.h"

namespace specgate {

// EQSPEC (DESIGN.md section 3): round-synchronous batch speculative decoding. Each round the
// drafter proposes K tokens for every live row, one target pass verifies them all, each row
// keeps its agreeing prefix plus a bonus token, and the batch is re-laid out: rows unpadded,
// extended, re-padded to the new minimal width, both caches moved with one batched gather per
// layer, rejected entries dropped. Finished rows leave the batch at once. With
// options.check_invariants, I1-I4 are checked after every round (InvariantViolation).
// options.rollback gives the `rollback` baseline, options.naive_realign `naive-realign`.
//
// As a Decoder it holds up to `batch_size` rows: requests admitted while others decode run
// their prompt pass at the next step and join the batch for the round after.
class EqspecDecoder final : public BatchDecoder {
 public:
  EqspecDecoder(const Transformer& target, Drafter& drafter, const DecodeOptions& options, int64_t batch_size);
  // The same verifying token trees, as EAGLE and Medusa engines speculate: each round one
  // TreeRound, whose I4 check replaces the chains'; the layout, its realignment and I1-I3 stay.
  EqspecDecoder(const Transformer& target, TreeDrafter& drafter, const DecodeOptions& options, int64_t batch_size);

  void admit(SequenceRequest request) override;
  const DecodeStats& stats() const override { return stats_; }

 private:
  class Batch;
  std::unique_ptr<BatchRun> run(int64_t batch_size, std::span<const SequenceRequest> requests) override;

  const Transformer& target_;
  NoDrafter no_drafter_;  // with trees: the prompt pass and the layout have no draft model
  Drafter& drafter_;
  TreeDrafter* tree_drafter_ = nullptr;
  DecodeOptions options_;
  DecodeStats stats_;
};

// The `nonspec-batch` baseline, EqspecDecoder with a drafter that proposes nothing: plain
// batched decoding with left padding (one token per row per step, K = 0).
std::unique_ptr<Decoder> make_nonspec_batch_decoder(const Transformer& target, const DecodeOptions& options,
                                                    int64_t batch_size);

// One batch of `requests` through EqspecDecoder; results in the order of `requests`, and
// what the run counted added to `stats`.
std::vector<SequenceResult> eqspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            DecodeStats* stats = nullptr);

// One batch of `requests` through EqspecDecoder verifying the trees `drafter` proposes.
std::vector<SequenceResult> tree_generate(const Transformer& target, TreeDrafter& drafter,
                                          std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                          DecodeStats* stats = nullptr);

// One batch of `requests` through the nonspec-batch decoder.
std::vector<SequenceResult> nonspec_batch_generate(const Transformer& target, std::span<const SequenceRequest> requests,
                                                   const DecodeOptions& options, DecodeStats* stats = nullptr);

}  // namespace specgate
