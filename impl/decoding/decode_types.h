#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "impl/common/sequence_result.h"
#include "impl/decoding/faults.h"
#include "impl/sampling/sampling.h"

namespace specgate {

// One sequence to decode. `sequence_index` names its random stream and its acceptance script,
// so a sequence's output never depends on which others share its batch.
struct SequenceRequest {
  int64_t sequence_index = 0;
  std::vector<int64_t> prompt;
  std::optional<int64_t> max_new_tokens;  // the options' when unset
  std::optional<uint64_t> random_stream;  // names the random stream instead of sequence_index
  std::optional<SamplingParams> sampling;  // the options' when unset
};

// What verification decided for one row.
struct RowDecision {
  int64_t accepted = 0;                // drafts kept
  std::vector<int64_t> drafted;        // the K drafts
  std::vector<int64_t> new_tokens;     // the kept drafts, then the bonus
  std::vector<int64_t> target_choice;  // greedy: the target's argmax at each of the K+1 positions
};

struct DecodeOptions {
  int64_t draft_tokens = 4;  // K
  int64_t max_new_tokens = 128;
  SamplingParams sampling;   // greedy by default
  std::vector<int64_t> eos_ids;
  bool rollback = false;           // truncate every row to the batch's minimum acceptance
  bool check_invariants = false;   // run the InvariantChecker after every round (slow)
  bool time_phases = false;        // synchronise the device around phases to time them
  bool naive_realign = false;      // re-lay out the caches as published decoders do (the naive-realign baseline)
  bool count_dispatches = false;   // count ATen operators and host syncs per round (slower; invariant checks count too)
  FaultSet faults;
};

// Cache slots a sequence of `tokens` tokens (prompt and new ones) needs: a round's drafts and
// its bonus may run past its last token.
inline int64_t cache_capacity(int64_t tokens, int64_t draft_tokens) { return tokens + draft_tokens + 2; }

inline int64_t cache_capacity(const SequenceRequest& request, const DecodeOptions& options) {
  return cache_capacity(static_cast<int64_t>(request.prompt.size()) + request.max_new_tokens.value_or(options.max_new_tokens),
                        options.draft_tokens);
}

// Cache slots the longest of `requests` needs.
inline int64_t cache_capacity(std::span<const SequenceRequest> requests, const DecodeOptions& options) {
  int64_t capacity = 0;
  for (const SequenceRequest& request : requests) capacity = std::max(capacity, cache_capacity(request, options));
  return capacity;
}

// How long one sequence took from admission (its prompt pass) to its last token.
struct SequenceLatency {
  int64_t sequence_index = 0;
  int64_t steps = 0;  // decoding steps of the whole decoder, its own or not
  double seconds = 0;
};

// Wall-clock seconds per phase of speculative decoding, acceptance counters and, with
// options.count_dispatches, what the rounds (draft, verify, accept, realign) dispatched.
struct DecodeStats {
  double draft_seconds = 0, verify_seconds = 0, realign_seconds = 0, other_seconds = 0;
  int64_t rounds = 0;
  int64_t operators = 0;   // ATen operators dispatched by the rounds, nested ones included
  int64_t host_syncs = 0;  // of which waited for the device: scalar reads, copies to the host
  int64_t counted_rounds = 0;
  int64_t drafted = 0;
  int64_t accepted = 0;
  int64_t generated = 0;     // every token, the first (from the prompt pass) included
  int64_t row_rounds = 0;    // rounds summed over rows
  int64_t round_tokens = 0;  // tokens those rounds appended
  std::vector<SequenceLatency> latencies;  // in finishing order

  // Adds what a later run counted: its latencies follow these.
  DecodeStats& operator+=(const DecodeStats& later) {
    for (double DecodeStats::*seconds : {&DecodeStats::draft_seconds, &DecodeStats::verify_seconds,
                                         &DecodeStats::realign_seconds, &DecodeStats::other_seconds})
      this->*seconds += later.*seconds;
    for (int64_t DecodeStats::*count :
         {&DecodeStats::rounds, &DecodeStats::operators, &DecodeStats::host_syncs, &DecodeStats::counted_rounds,
          &DecodeStats::drafted, &DecodeStats::accepted, &DecodeStats::generated, &DecodeStats::row_rounds,
          &DecodeStats::round_tokens})
      this->*count += later.*count;
    latencies.insert(latencies.end(), later.latencies.begin(), later.latencies.end());
    return *this;
  }

  double acceptance_rate() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
  // Mean tokens a row proposes per round it takes part in (K for a model drafter, 0 to K for
  // n-gram lookup).
  double draft_length() const { return row_rounds ? static_cast<double>(drafted) / row_rounds : 0.0; }
  // Mean tokens a row gains per round it takes part in (at most K + 1).
  double tokens_per_round() const { return row_rounds ? static_cast<double>(round_tokens) / row_rounds : 0.0; }
  double operators_per_round() const { return counted_rounds ? static_cast<double>(operators) / counted_rounds : 0.0; }
  double host_syncs_per_round() const { return counted_rounds ? static_cast<double>(host_syncs) / counted_rounds : 0.0; }
};

}  // namespace specgate
