#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "impl/decoding/decode_types.h"
#include "impl/model/kv_cache.h"
#include "impl/sampling/sampling.h"

namespace specgate {

// The slots one row's K/V occupy in one cache: `count` slots from `first`, in the cache row the
// row lives in (its batch row, or its pool slot while EXSPEC stores it unpadded, from slot 0).
struct RowSlots {
  int64_t first = 0;
  int64_t count = 0;

  SlotRun in_row(int64_t cache_row) const { return {cache_row, first, count}; }
};

// One live sequence of a rectangular, left-padded batch.
struct Row {
  Row(const SequenceRequest& request, const DecodeOptions& options)
      : sequence_index(request.sequence_index),
        tokens(request.prompt),
        prompt_length(static_cast<int64_t>(request.prompt.size())),
        max_new_tokens(request.max_new_tokens.value_or(options.max_new_tokens)),
        sampling(request.sampling.value_or(options.sampling)),
        rng(sampling.seed, request.random_stream.value_or(static_cast<uint64_t>(request.sequence_index))) {}

  int64_t sequence_index;
  std::vector<int64_t> tokens;  // content: the prompt, then what was generated
  int64_t prompt_length;
  int64_t max_new_tokens;
  SamplingParams sampling;       // how the row's tokens are chosen, its stream's seed included
  int64_t position_padding = 0;  // the padding position ids are computed with (I2: equals the padding)
  RowSlots target_slots;         // where the target cache holds the K/V of the leading content tokens
  RowSlots draft_slots;          // likewise for the draft cache
  std::vector<int64_t> accept_lengths;
  int64_t drafted = 0, accepted = 0;  // draft tokens proposed to the target, and kept by it
  int64_t ragged_rounds = 0;  // rounds in which rows of its batch kept different numbers of drafts
  int64_t realignments = 0;   // times its K/V moved to other slots of the batch caches
  SequenceRng rng;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kLength;
  int64_t admitted_step = 0;  // the decoder's step count when the row's prompt pass ran
  std::chrono::steady_clock::time_point admitted_at;

  int64_t content() const { return static_cast<int64_t>(tokens.size()); }
  int64_t generated() const { return content() - prompt_length; }
};

// The caches of a batch `width` slots wide hold every slot but the last: each row's last
// token is pending, the first input of the next pass, and gets its K/V there.
inline int64_t cached_slots(int64_t width) { return width - 1; }

// The rows of a batch laid out in `width` slots: row i's content token j sits at slot
// padding(i) + j, where padding(i) = width - content. DESIGN.md's I1 asks width = the
// largest content, so that some row has no padding.
struct BatchState {
  std::vector<Row> rows;
  int64_t width = 0;

  int64_t batch_size() const { return static_cast<int64_t>(rows.size()); }
  // Whether every row, or some row, chooses its tokens greedily.
  bool all_greedy() const {
    return std::all_of(rows.begin(), rows.end(), [](const Row& row) { return row.sampling.greedy(); });
  }
  bool any_greedy() const {
    return std::any_of(rows.begin(), rows.end(), [](const Row& row) { return row.sampling.greedy(); });
  }
  // Each row's sampling, in row order.
  std::vector<SamplingParams> sampling() const {
    std::vector<SamplingParams> out;
    for (const Row& row : rows) out.push_back(row.sampling);
    return out;
  }
  int64_t padding(size_t row) const { return width - rows[row].content(); }
  int64_t cache_length() const { return cached_slots(width); }
};

}  // namespace specgate
