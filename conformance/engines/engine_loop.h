#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "conformance/engines/drafting.h"
#include "conformance/engines/engine.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/decoders.h"
#include "impl/decoding/exspec.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/decoding/tree_drafter.h"
#include "impl/model/transformer.h"

namespace specgate::cli {

// One engine and its settings, as generate, bench and demo run it.
struct EngineSpec {
  Engine engine = Engine::kOracle;
  const Transformer* target = nullptr;
  Drafting drafting;                       // speculative engines
  const Transformer* draft = nullptr;      // engines that need a draft model
  const ScriptedDrafts* script = nullptr;  // scripted acceptance (bench, with a draft model)
  DecoderSettings decoder;                 // the oracle takes decode's length, sampling and EOS ids;
                                           // sequence_capacity is set for each run's requests
  int64_t top_logprobs = 0;                // oracle
  const TreePolicy* tree = nullptr;        // eqspec with a draft model: verify trees drafted so
};

// What runs of an engine add up to.
struct EngineTally {
  DecodeStats stats;
  ExspecStats exspec_stats;
  double seconds = 0.0;
  int64_t tokens = 0;
};

// An invariant the checker found violated, with where: the round, counted from the prompt
// pass (0) of the earliest admitted sequence in flight, and the sequences concerned (the one
// the checker names, or else every sequence in flight). Whoever knows what the sequences
// stand for throws a copy with their `questions`.
class LocatedViolation : public std::runtime_error {
 public:
  LocatedViolation(const std::string& violation, int64_t round, std::vector<int64_t> sequences)
      : std::runtime_error(violation), round(round), sequences(std::move(sequences)) {}
  LocatedViolation with_questions(std::vector<int64_t> question_ids, size_t in_turn) const {
    LocatedViolation located = *this;
    located.questions = std::move(question_ids);
    located.turn = in_turn;
    return located;
  }
  int64_t round;
  std::vector<int64_t> sequences;
  std::vector<int64_t> questions;
  size_t turn = 0;
};

// Decodes every request: the oracle one at a time, the others through their Decoder
// (make_decoder), admitted in request order as it has places. Each sequence goes to
// `finished` as soon as its decoder returns it, with the wall time charged to it: the oracle's
// own passes, a batch decoder's time from the sequence's prompt pass to its last token.
// `tally` adds up every run. With
// decode.check_invariants, a violated invariant ends the run with a LocatedViolation. When
// `stopping` (if given) says so before a step, the run ends there: what finished was handed over.
void decode_requests(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                     const std::function<void(SequenceResult)>& finished, const std::function<bool()>& stopping = {});

}  // namespace specgate::cli
