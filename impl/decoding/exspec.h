#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "impl/decoding/decode_types.h"
#include "impl/decoding/decoder.h"
#include "impl/decoding/drafter.h"
#include "impl/decoding/tree_drafter.h"
#include "impl/model/transformer.h"

namespace specgate {

struct ExspecOptions {
  int64_t batch_size = 8;              // B: rows per step
  int64_t window = 16;                 // W >= B: sequences active at once
  bool sort_by_prompt_length = false;  // exspec_generate admits the requests shortest prompt first
  int64_t max_wait_steps = 0;          // aging: a sequence left out this many steps in a row goes next; 0 = off
};

struct ExspecStats {
  int64_t steps = 0;
  int64_t grouped_steps = 0;   // steps whose rows all had one length: no padding, no realignment
  int64_t fallback_steps = 0;  // steps that re-padded (EQSPEC's alignment)
  int64_t longest_wait = 0;    // most consecutive steps a window sequence was left out

  ExspecStats& operator+=(const ExspecStats& later) {
    steps += later.steps;
    grouped_steps += later.grouped_steps;
    fallback_steps += later.fallback_steps;
    longest_wait = std::max(longest_wait, later.longest_wait);
    return *this;
  }

  double grouping_rate() const { return steps ? static_cast<double>(grouped_steps) / steps : 0.0; }
};

// Throws InputError when the options cannot run: W < B, B < 1, or an aging bound that no
// schedule can honour with this window and batch size.
void validate(const ExspecOptions& exspec);

// EXSPEC (DESIGN.md section 3), fed one request at a time: sequences live unpadded in
// per-sequence slots of a pool for W sequences of at most `sequence_capacity` tokens each
// (prompt, new tokens and a round's drafts: see cache_capacity()), which grows to the longest
// it has held. A request
// admitted between steps takes a free place of the window and has its prompt pass at the
// start of the next step, with the other newcomers, B prompts at a time. Each step then runs
// one speculative round on B sequences of the window, preferring B of identical length (no
// padding, no realignment) and otherwise re-padding like EQSPEC; rows that stay in the batch
// from one step to the next stay in place. A sequence's output does not depend on when it was
// admitted nor on which others share its steps.
class ExspecDecoder final : public Decoder {
 public:
  // Throws InputError for options that cannot run (see validate()).
  ExspecDecoder(const Transformer& target, Drafter& drafter, const DecodeOptions& options, const ExspecOptions& exspec,
                int64_t sequence_capacity);
  // The same verifying token trees: each step one TreeRound on its B sequences, grouped and
  // pooled as chains are; `sequence_capacity` counts a round's largest tree as K drafts.
  ExspecDecoder(const Transformer& target, TreeDrafter& drafter, const DecodeOptions& options,
                const ExspecOptions& exspec, int64_t sequence_capacity);
  ~ExspecDecoder() override;
  ExspecDecoder(const ExspecDecoder&) = delete;
  ExspecDecoder& operator=(const ExspecDecoder&) = delete;

  // Places of the window admit() may still fill before the next step.
  int64_t free_places() const override;
  // Whether the request's prompt, its new tokens and a round's drafts fit a pool slot.
  bool fits(const SequenceRequest& request) const;
  // Cache slots a pool slot has now: the longest sequence held so far, doubled as it grew.
  int64_t pool_slots() const;
  // Throws InputError for an empty prompt or one that does not fit a pool slot.
  void admit(SequenceRequest request) override;
  bool has_work() const override;
  std::vector<SequenceResult> step() override;
  void cancel(int64_t sequence_index) override;
  void visit_live(const LiveVisitor& visit) const override;

  const DecodeStats& stats() const override;
  const ExspecStats& exspec_stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Every request through one ExspecDecoder, admitted in order (shortest prompt first with
// exspec.sort_by_prompt_length) as places free up. Results come back in the order of
// `requests`; stats.latencies has one entry per sequence.
std::vector<SequenceResult> exspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            const ExspecOptions& exspec, DecodeStats* stats = nullptr,
                                            ExspecStats* exspec_stats = nullptr);

}  // namespace specgate
