#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conformance/engines/engine.h"
#include "conformance/engines/engine_loop.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/exspec.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/decoding/tree_drafter.h"
#include "impl/model/transformer.h"

namespace specgate::cli {

// The engines bench measures: every one but the oracle.
inline constexpr Engine kBenchEngines[] = {Engine::kNonspecBatch, Engine::kEqspec,   Engine::kNaiveRealign, Engine::kExspec,
                                           Engine::kExspecAging,  Engine::kRollback, Engine::kTree};

// What every measurement of one run shares.
struct BenchSetup {
  const Transformer* target = nullptr;
  Drafting drafting;
  const Transformer* draft = nullptr;  // drafting with a model
  std::vector<SequenceRequest> requests;
  DecodeOptions decode;                  // greedy; K, max_new_tokens and EOS set
  std::optional<ScriptedDrafts> script;  // scripted acceptance
  const TreePolicy* tree = nullptr;      // the tree engine's trees
  int64_t window_per_batch = 2;          // EXSPEC's window is this many batches
  int64_t max_wait = 1;                  // exspec-aging's bound, raised to the smallest feasible
};

// One engine at one batch size.
struct BenchCase {
  Engine engine = Engine::kNonspecBatch;
  int64_t batch_size = 0;
};

// One timed run: repeat `repeat` of cases[case_index].
struct ScheduledRun {
  size_t case_index = 0;
  int64_t repeat = 0;
};

// Round-robin: the r-th run of every case before the (r+1)-th of any, so that a slow spell
// of a shared machine falls on every engine and batch size alike instead of on one, and each
// repeat's ratios compare runs made minutes apart at most.
std::vector<ScheduledRun> interleaved_schedule(size_t cases, int64_t repeat);

// One engine at one batch size: the median of `repeat` timed runs over every request.
struct Measurement {
  Engine engine = Engine::kNonspecBatch;
  int64_t batch_size = 0;
  ExspecOptions exspec;              // exspec and exspec-aging
  std::vector<double> run_seconds;   // every run, by repeat
  double seconds = 0.0;              // the median run's
  int64_t tokens = 0;                // generated per run
  DecodeStats stats;                 // the median run's
  ExspecStats exspec_stats;          // the median run's
  double latency_p50_s = 0.0, latency_p99_s = 0.0;
  double operators_per_round = 0.0;  // ATen operators dispatched per round, nested ones included
  double host_syncs_per_round = 0.0;  // device-to-host synchronisations per round
  int64_t peak_memory_bytes = 0;     // peak during the runs, read from peak_memory_source
  std::string peak_memory_source;
  double tokens_per_s() const { return seconds > 0 ? tokens / seconds : 0.0; }
};

// Measures every case `repeat` times in interleaved_schedule's order; `on_run` is told of
// each run before it starts. Returns one Measurement per case, in the order of `cases`.
std::vector<Measurement> measure(const BenchSetup& setup, const std::vector<BenchCase>& cases, int64_t repeat,
                                 const std::function<void(const ScheduledRun&)>& on_run);

// The target's greedy continuation of every request, `length` tokens long (or up to EOS):
// what a scripted drafter proposes when it is right.
std::map<int64_t, std::vector<int64_t>> greedy_continuations(const Transformer& target,
                                                             const std::vector<SequenceRequest>& requests,
                                                             const DecodeOptions& decode, int64_t length,
                                                             int64_t batch_size);

}  // namespace specgate::cli
