#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "impl/decoding/batch_decoder.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/token_tree.h"
#include "impl/decoding/tree_drafter.h"
#include "impl/model/transformer.h"

namespace specgate {

// Tree verification, as EAGLE and Medusa engines speculate, behind the decoder interface, on
// EQSPEC's layout. It takes up to `batch_size` requests while idle; its next step is their
// prompt pass, and each later step one TreeRound; finished rows leave and the rest are
// re-padded as EQSPEC's are. Greedy and sampled requests alike. With options.check_invariants,
// I1-I3 after every round too: each row's cache holds exactly its content, the kept path
// included, as a pass over it alone computes.
class TreeDecoder final : public BatchDecoder {
 public:
  TreeDecoder(const Transformer& target, TreeDrafter& drafter, const DecodeOptions& options, int64_t batch_size);

  // Throws InputError for an empty prompt.
  void admit(SequenceRequest request) override;
  const DecodeStats& stats() const override { return stats_; }

 private:
  class Batch;
  std::unique_ptr<BatchRun> run(std::span<const SequenceRequest> requests) override;

  const Transformer& target_;
  TreeDrafter& drafter_;
  DecodeOptions options_;
  DecodeStats stats_;
};

// One batch of `requests` through TreeDecoder; results in the order of `requests`.
std::vector<SequenceResult> tree_generate(const Transformer& target, TreeDrafter& drafter,
                                          std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                          DecodeStats* stats = nullptr);

}  // namespace specgate
