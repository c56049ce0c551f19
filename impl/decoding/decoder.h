#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "impl/decoding/decode_types.h"

namespace specgate {

// A batch decoder fed one request at a time: EQSPEC (with rollback, naive-realign and
// nonspec-batch as its variants) and EXSPEC. A caller admits requests while free_places() > 0,
// then steps; each step returns the sequences that finished in it. A sequence's output never
// depends on which others share its steps.
class Decoder {
 public:
  virtual ~Decoder() = default;

  // Requests admit() still takes before the next step.
  virtual int64_t free_places() const = 0;
  // Queues a request for the next step. Throws InputError for an empty prompt or one the
  // decoder cannot hold; admitting with no free place is a caller's error (c10::Error).
  virtual void admit(SequenceRequest request) = 0;
  // Whether a sequence is queued or being decoded.
  virtual bool has_work() const = 0;
  // Runs the queued prompt passes and one round; returns the sequences that finished in it.
  virtual std::vector<SequenceResult> step() = 0;
  // Drops a sequence, queued or being decoded, before the next step: no step returns it, and
  // the others go on as if it had never come. Does nothing for a sequence it does not hold.
  virtual void cancel(int64_t sequence_index) = 0;
  // Calls `visit` with each sequence being decoded and the tokens it generated so far, its
  // prompt left out: after a step, what that step added to those that did not finish.
  using LiveVisitor = std::function<void(int64_t sequence_index, std::span<const int64_t> generated)>;
  virtual void visit_live(const LiveVisitor& visit) const = 0;
  virtual const DecodeStats& stats() const = 0;
};

// Admits `requests` in their order as places free up (telling `admitting` of each first, when
// given) and steps until every one has finished, or until `stopping` (when given) says so
// before a step; each goes to `finished` at the step it finishes in.
void feed(Decoder& decoder, std::span<const SequenceRequest> requests,
          const std::function<void(SequenceResult)>& finished,
          const std::function<void(const SequenceRequest&)>& admitting = {},
          const std::function<bool()>& stopping = {});

// `requests` ordered shortest prompt first, stably.
std::vector<SequenceRequest> shortest_prompt_first(std::span<const SequenceRequest> requests);

// feed() (of the shortest prompts first with `shortest_first`), with the results in the order
// of `requests`: a sequence a decoder returned twice is there twice, one it lost missing.
std::vector<SequenceResult> decode_all(Decoder& decoder, std::span<const SequenceRequest> requests,
                                       bool shortest_first = false);

}  // namespace specgate
