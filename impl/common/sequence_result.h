#pragma once

#include <cstdint>
#include <vector>

#include "impl/common/finish_reason.h"
#include "impl/common/token_logprob.h"

namespace specgate {

// A finished sequence, as every decoder gives it, the oracle included.
struct SequenceResult {
  int64_t sequence_index = 0;
  std::vector<int64_t> tokens;          // generated ids, EOS included when hit
  FinishReason finish_reason = FinishReason::kLength;
  int64_t rounds = 0;                   // target passes after its prompt pass
  std::vector<int64_t> accept_lengths;  // tokens appended per round by a speculative decoder
  int64_t drafted = 0, accepted = 0;    // draft tokens proposed to the target, and kept by it
  // What its batch exercised (coverage): rounds in which rows kept different numbers of drafts,
  // times its K/V moved within the batch caches, and whether it finished while others went on.
  int64_t ragged_rounds = 0, realignments = 0;
  bool finished_early = false;
  std::vector<std::vector<TokenLogprob>> top_logprobs;  // per generated token, best first, when recorded
  double seconds = 0.0;                 // wall time charged to it, when timed

  // Target passes that produced its tokens: the prompt pass and every round.
  int64_t decoding_steps() const { return rounds + 1; }
};

}  // namespace specgate
