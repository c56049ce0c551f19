#include "conformance/engines/engine_loop.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "impl/decoding/decoders.h"
#include "impl/decoding/invariant_checker.h"
#include "oracle/oracle.h"

namespace specgate::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A violation found while `in_flight` (each sequence with the decoder's round count when it
// was admitted) were being decoded: the sequence it names, or else every one in flight; its
// round counts from the earliest admission among them (0 is that prompt pass).
LocatedViolation located(const InvariantViolation& violation, const std::map<int64_t, int64_t>& in_flight,
                         int64_t rounds) {
  std::vector<int64_t> sequences;
  int64_t first_round = rounds;
  for (const auto& [sequence, admitted] : in_flight) {
    if (!violation.sequence_index) sequences.push_back(sequence);
    first_round = std::min(first_round, admitted);
  }
  if (violation.sequence_index) sequences.push_back(*violation.sequence_index);
  return LocatedViolation(violation.what(), rounds - first_round, std::move(sequences));
}

void decode_one_by_one(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                       const std::function<void(SequenceResult)>& finished, const std::function<bool()>& stopping) {
  const DecodeOptions& decode = spec.decoder.decode;
  const OracleOptions options{.max_new_tokens = decode.max_new_tokens, .sampling = decode.sampling,
                              .eos_ids = decode.eos_ids, .top_logprobs = spec.top_logprobs};
  for (const SequenceRequest& request : requests) {
    if (stopping && stopping()) return;
    const auto start = Clock::now();
    SequenceResult result = oracle_generate(*spec.target, request.prompt, options,
                                            request.random_stream.value_or(static_cast<uint64_t>(request.sequence_index)));
    result.sequence_index = request.sequence_index;
    result.seconds = seconds_since(start);
    tally.seconds += result.seconds;
    tally.tokens += static_cast<int64_t>(result.tokens.size());
    finished(std::move(result));
  }
}

// Requests join the decoder in order (EXSPEC: shortest prompt first with
// sort_by_prompt_length) as places free up; each sequence is handed over at the step it
// finishes, charged its own time from its prompt pass to its last token.
void decode_through_decoder(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                            const std::function<void(SequenceResult)>& finished, const std::function<bool()>& stopping) {
  if (requests.empty()) return;
  const DecoderKind kind = decoder_kind(spec.engine);
  const std::unique_ptr<Drafter> drafter = make_drafter(spec.engine, spec.drafting, spec.draft, spec.script);
  DecoderSettings settings = spec.decoder;
  if (spec.tree != nullptr) settings.decode.draft_tokens = max_tree_nodes(*spec.tree);
  settings.sequence_capacity = cache_capacity(requests, settings.decode);
  const std::vector<SequenceRequest> order = admits_shortest_first(kind, settings)
                                                 ? shortest_prompt_first(requests)
                                                 : std::vector<SequenceRequest>(requests.begin(), requests.end());
  const auto start = Clock::now();
  std::unique_ptr<TreeDrafter> tree_drafter;
  std::unique_ptr<Decoder> decoder;
  if (spec.tree != nullptr) {
    tree_drafter = make_model_tree_drafter(*spec.draft, *spec.tree);
    decoder = make_tree_decoder(kind, *spec.target, *tree_drafter, settings);
  } else {
    decoder = make_decoder(kind, *spec.target, drafter.get(), settings);
  }
  std::map<int64_t, int64_t> in_flight;  // sequence -> the decoder's round count at its admission
  const auto admitting = [&](const SequenceRequest& request) {
    in_flight[request.sequence_index] = decoder->stats().rounds;
  };
  const auto done = [&](SequenceResult result) {
    in_flight.erase(result.sequence_index);
    const std::vector<SequenceLatency>& latencies = decoder->stats().latencies;  // the step's finishers last
    const auto latency = std::find_if(latencies.rbegin(), latencies.rend(), [&](const SequenceLatency& l) {
      return l.sequence_index == result.sequence_index;
    });
    result.seconds = latency->seconds;
    tally.tokens += static_cast<int64_t>(result.tokens.size());
    finished(std::move(result));
  };
  try {
    feed(*decoder, order, done, admitting, stopping);
  } catch (const InvariantViolation& violation) {
    throw located(violation, in_flight, decoder->stats().rounds);
  }
  tally.seconds += seconds_since(start);
  tally.stats += decoder->stats();
  tally.exspec_stats += exspec_stats_of(*decoder);
}

}  // namespace

void decode_requests(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                     const std::function<void(SequenceResult)>& finished, const std::function<bool()>& stopping) {
  if (spec.engine == Engine::kOracle) return decode_one_by_one(spec, requests, tally, finished, stopping);
  decode_through_decoder(spec, requests, tally, finished, stopping);
}

}  // namespace specgate::cli
