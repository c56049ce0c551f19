#include "conformance/engines/engine_loop.h"

#include <algorithm>
#include <chrono>

#include "impl/decoding/eqspec.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/model_drafter.h"
#include "oracle/oracle.h"

namespace specgate::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

DecodeOptions decoder_options(const EngineSpec& spec) {
  DecodeOptions decode = spec.decode;
  decode.rollback = spec.engine == Engine::kRollback;
  decode.naive_realign = spec.engine == Engine::kNaiveRealign;
  return decode;
}

// A violation found in `round` of a decoder run over `requests`: the sequence it names, or
// else every sequence of the run.
LocatedViolation located(const InvariantViolation& violation, int64_t round,
                                 std::span<const SequenceRequest> requests) {
  std::vector<int64_t> sequences;
  if (violation.sequence_index) {
    sequences.push_back(*violation.sequence_index);
  } else {
    for (const SequenceRequest& request : requests) sequences.push_back(request.sequence_index);
  }
  return LocatedViolation(violation.what(), round, std::move(sequences));
}

void hand_over(SequenceResult result, double seconds, EngineTally& tally,
               const std::function<void(FinishedSequence)>& finished) {
  tally.tokens += static_cast<int64_t>(result.tokens.size());
  const int64_t steps = result.rounds + 1;  // the prompt pass and every round
  finished({.result = std::move(result), .decoding_steps = steps, .seconds = seconds});
}

void decode_one_by_one(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                       const std::function<void(FinishedSequence)>& finished) {
  const OracleOptions options{.max_new_tokens = spec.decode.max_new_tokens, .sampling = spec.decode.sampling,
                              .eos_ids = spec.decode.eos_ids, .top_logprobs = spec.top_logprobs};
  for (const SequenceRequest& request : requests) {
    const auto start = Clock::now();
    OracleOutput out = oracle_generate(*spec.target, request.prompt, options, request.sequence_index);
    const double seconds = seconds_since(start);
    tally.seconds += seconds;
    tally.tokens += static_cast<int64_t>(out.tokens.size());
    const auto steps = static_cast<int64_t>(out.tokens.size());  // one pass per token
    finished({.result = {.sequence_index = request.sequence_index, .tokens = std::move(out.tokens),
                         .finish_reason = out.finish_reason},
              .decoding_steps = steps,
              .seconds = seconds,
              .top_logprobs = std::move(out.top_logprobs)});
  }
}

// Requests join the window in order (shortest prompt first with sort_by_prompt_length) as
// places free up; each sequence is handed over at the step it finishes, charged its own time
// from admission to its last token.
void decode_as_pool(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                    const std::function<void(FinishedSequence)>& finished) {
  if (requests.empty()) return;
  const DecodeOptions decode = decoder_options(spec);
  ExspecOptions exspec = spec.exspec;
  exspec.batch_size = spec.batch_size;
  const auto start = Clock::now();
  ModelDrafter drafter(*spec.draft, spec.script);
  ExspecDecoder decoder(*spec.target, drafter, decode, exspec, pool_capacity(requests, decode));
  try {
    feed_pool(decoder, requests, exspec.sort_by_prompt_length, [&](SequenceResult result) {
      const std::vector<SequenceLatency>& latencies = decoder.stats().latencies;  // the step's finishers last
      const auto latency = std::find_if(latencies.rbegin(), latencies.rend(), [&](const SequenceLatency& l) {
        return l.sequence_index == result.sequence_index;
      });
      hand_over(std::move(result), latency->seconds, tally, finished);
    });
  } catch (const InvariantViolation& violation) {
    throw located(violation, decoder.stats().rounds, requests);
  }
  tally.seconds += seconds_since(start);
  tally.stats += decoder.stats();
  tally.exspec_stats += decoder.exspec_stats();
}

// Each row of a batch is charged the batch's wall time.
void decode_in_batches(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                       const std::function<void(FinishedSequence)>& finished) {
  const DecodeOptions decode = decoder_options(spec);
  const auto batch_size = static_cast<size_t>(spec.batch_size);
  for (size_t first = 0; first < requests.size(); first += batch_size) {
    const std::span<const SequenceRequest> batch = requests.subspan(first, std::min(requests.size() - first, batch_size));
    const auto start = Clock::now();
    const int64_t rounds_before = tally.stats.rounds;
    std::vector<SequenceResult> results;
    try {
      if (spec.engine == Engine::kNonspecBatch) {
        results = nonspec_batch_generate(*spec.target, batch, decode, &tally.stats);
      } else {
        ModelDrafter drafter(*spec.draft, spec.script);
        results = eqspec_generate(*spec.target, drafter, batch, decode, &tally.stats);
      }
    } catch (const InvariantViolation& violation) {
      throw located(violation, tally.stats.rounds - rounds_before, batch);
    }
    const double seconds = seconds_since(start);
    tally.seconds += seconds;
    for (SequenceResult& result : results) hand_over(std::move(result), seconds, tally, finished);
  }
}

}  // namespace

void decode_requests(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                     const std::function<void(FinishedSequence)>& finished) {
  if (spec.engine == Engine::kOracle) return decode_one_by_one(spec, requests, tally, finished);
  if (is_exspec(spec.engine)) return decode_as_pool(spec, requests, tally, finished);
  decode_in_batches(spec, requests, tally, finished);
}

}  // namespace specgate::cli
