#pragma once

#include <span>
#include <vector>

#include "impl/decoding/decode_types.h"
#include "impl/decoding/drafter.h"
#include "impl/model/transformer.h"

namespace specgate {

struct ExspecOptions {
  int64_t batch_size = 8;              // B: rows per step
  int64_t window = 16;                 // W >= B: sequences active at once
  bool sort_by_prompt_length = false;  // admit the pool shortest prompt first
  int64_t max_wait_steps = 0;          // aging: a sequence left out this many steps in a row goes next; 0 = off
};

struct ExspecStats {
  int64_t steps = 0;
  int64_t grouped_steps = 0;   // steps whose rows all had one length: no padding, no realignment
  int64_t fallback_steps = 0;  // steps that re-padded (EQSPEC's alignment)
  int64_t longest_wait = 0;    // most consecutive steps a window sequence was left out

  double grouping_rate() const { return steps ? static_cast<double>(grouped_steps) / steps : 0.0; }
};

// Throws InputError when the options cannot run: W < B, B < 1, or an aging bound that no
// schedule can honour with this window and batch size.
void validate(const ExspecOptions& exspec);

// EXSPEC (DESIGN.md section 3): sequences live unpadded in per-sequence slots of a
// preallocated pool; a window of W of them is active and refilled in order as sequences
// finish. Each step runs one speculative round on B sequences of the window, preferring B of
// identical length (no padding, no realignment) and otherwise re-padding like EQSPEC. Rows
// that stay in the batch from one step to the next stay in place. Results come back in the
// order of `requests`; stats.latencies has one entry per sequence.
std::vector<SequenceResult> exspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            const ExspecOptions& exspec, DecodeStats* stats = nullptr,
                                            ExspecStats* exspec_stats = nullptr);

}  // namespace specgate
