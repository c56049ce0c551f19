#include "conformance/engines/engine_loop.h"

#include <algorithm>
#include <chrono>
#include <map>

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

// Runs one decoder call over `requests`; a violated invariant becomes a verdict located at
// the call's round.
template <typename Decode>
std::vector<SequenceResult> located(const Decode& decode, std::span<const SequenceRequest> requests,
                                    const EngineTally& tally) {
  const int64_t rounds_before = tally.stats.rounds;
  try {
    return decode();
  } catch (const InvariantViolation& violation) {
    std::vector<int64_t> sequences;
    if (violation.sequence_index) {
      sequences.push_back(*violation.sequence_index);
    } else {
      for (const SequenceRequest& request : requests) sequences.push_back(request.sequence_index);
    }
    throw InvariantVerdict(violation.what(), tally.stats.rounds - rounds_before, std::move(sequences));
  }
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

// Each answer is charged its own time from admission to its last token.
void decode_as_pool(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                    const std::function<void(FinishedSequence)>& finished) {
  const DecodeOptions decode = decoder_options(spec);
  ExspecOptions exspec = spec.exspec;
  exspec.batch_size = spec.batch_size;
  const size_t first_latency = tally.stats.latencies.size();
  const auto start = Clock::now();
  ModelDrafter drafter(*spec.draft, spec.script);
  std::vector<SequenceResult> results = located(
      [&] { return exspec_generate(*spec.target, drafter, requests, decode, exspec, &tally.stats, &tally.exspec_stats); },
      requests, tally);
  tally.seconds += seconds_since(start);
  std::map<int64_t, double> latency;
  for (size_t i = first_latency; i < tally.stats.latencies.size(); ++i)
    latency[tally.stats.latencies[i].sequence_index] = tally.stats.latencies[i].seconds;
  for (SequenceResult& result : results) {
    const double seconds = latency[result.sequence_index];
    hand_over(std::move(result), seconds, tally, finished);
  }
}

// Each row of a batch is charged the batch's wall time.
void decode_in_batches(const EngineSpec& spec, std::span<const SequenceRequest> requests, EngineTally& tally,
                       const std::function<void(FinishedSequence)>& finished) {
  const DecodeOptions decode = decoder_options(spec);
  const auto batch_size = static_cast<size_t>(spec.batch_size);
  for (size_t first = 0; first < requests.size(); first += batch_size) {
    const std::span<const SequenceRequest> batch = requests.subspan(first, std::min(requests.size() - first, batch_size));
    const auto start = Clock::now();
    std::vector<SequenceResult> results = located(
        [&] {
          if (spec.engine == Engine::kNonspecBatch) return nonspec_batch_generate(*spec.target, batch, decode, &tally.stats);
          ModelDrafter drafter(*spec.draft, spec.script);
          return eqspec_generate(*spec.target, drafter, batch, decode, &tally.stats);
        },
        batch, tally);
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
