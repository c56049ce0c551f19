#include "conformance/bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <span>
#include <string>

#include "conformance/bench/peak_memory.h"
#include "impl/common/error.h"
#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/model_drafter.h"

namespace specgate::cli {
namespace {

constexpr std::pair<const char*, BenchEngine> kBenchEngines[] = {
    {"nonspec-batch", BenchEngine::kNonspecBatch}, {"eqspec", BenchEngine::kEqspec},
    {"naive-realign", BenchEngine::kNaiveRealign}, {"exspec", BenchEngine::kExspec},
    {"exspec-aging", BenchEngine::kExspecAging},   {"rollback", BenchEngine::kRollback}};

bool is_exspec(BenchEngine engine) { return engine == BenchEngine::kExspec || engine == BenchEngine::kExspecAging; }

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(at);
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (at - static_cast<double>(below)) * (values[above] - values[below]);
}

struct Run {
  double seconds = 0.0;
  int64_t tokens = 0;
  DecodeStats stats;
  ExspecStats exspec_stats;
};

Run run_once(const BenchSetup& setup, BenchEngine engine, int64_t batch_size, const ExspecOptions& exspec) {
  DecodeOptions decode = setup.decode;
  decode.time_phases = true;
  decode.rollback = engine == BenchEngine::kRollback;
  decode.naive_realign = engine == BenchEngine::kNaiveRealign;
  const ScriptedDrafts* script = setup.script ? &*setup.script : nullptr;
  Run run;
  std::vector<SequenceResult> results;
  const auto start = std::chrono::steady_clock::now();
  if (is_exspec(engine)) {
    ModelDrafter drafter(*setup.draft, script);
    results = exspec_generate(*setup.target, drafter, setup.requests, decode, exspec, &run.stats, &run.exspec_stats);
  } else {
    const std::span<const SequenceRequest> all(setup.requests);
    for (size_t first = 0; first < all.size(); first += batch_size) {
      const auto batch = all.subspan(first, std::min(all.size() - first, static_cast<size_t>(batch_size)));
      std::vector<SequenceResult> part;
      if (engine == BenchEngine::kNonspecBatch) {
        part = nonspec_batch_generate(*setup.target, batch, decode, &run.stats);
      } else {
        ModelDrafter drafter(*setup.draft, script);
        part = eqspec_generate(*setup.target, drafter, batch, decode, &run.stats);
      }
      std::move(part.begin(), part.end(), std::back_inserter(results));
    }
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const SequenceResult& result : results) run.tokens += static_cast<int64_t>(result.tokens.size());
  return run;
}

}  // namespace

BenchEngine bench_engine_from_name(const std::string& name) {
  for (const auto& [known, engine] : kBenchEngines) {
    if (name == known) return engine;
  }
  throw InputError("--engines: unknown engine '" + name +
                   "' (expected nonspec-batch, eqspec, naive-realign, exspec, exspec-aging or rollback)");
}

std::string bench_engine_name(BenchEngine engine) {
  for (const auto& [known, value] : kBenchEngines) {
    if (value == engine) return known;
  }
  return "?";
}

Measurement measure(const BenchSetup& setup, BenchEngine engine, int64_t batch_size, int64_t repeat) {
  Measurement m{.engine = engine, .batch_size = batch_size};
  if (is_exspec(engine)) {
    m.exspec.batch_size = batch_size;
    m.exspec.window = setup.window_per_batch * batch_size;
    if (engine == BenchEngine::kExspecAging)
      m.exspec.max_wait_steps = std::max(setup.max_wait, smallest_feasible_wait(m.exspec.window, batch_size));
    validate(m.exspec);
  }
  reset_peak_memory();
  std::vector<Run> runs;
  for (int64_t r = 0; r < repeat; ++r) {
    runs.push_back(run_once(setup, engine, batch_size, m.exspec));
    m.run_seconds.push_back(runs.back().seconds);
  }
  m.peak_memory_bytes = peak_memory_bytes();
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return runs[a].seconds < runs[b].seconds; });
  Run& median = runs[order[order.size() / 2]];
  m.seconds = median.seconds;
  m.tokens = median.tokens;
  m.stats = std::move(median.stats);
  m.exspec_stats = median.exspec_stats;
  std::vector<double> latencies;
  for (const SequenceLatency& latency : m.stats.latencies) latencies.push_back(latency.seconds);
  m.latency_p50_s = quantile(latencies, 0.50);
  m.latency_p99_s = quantile(latencies, 0.99);
  return m;
}

std::map<int64_t, std::vector<int64_t>> greedy_continuations(const Transformer& target,
                                                             const std::vector<SequenceRequest>& requests,
                                                             const DecodeOptions& decode, int64_t length,
                                                             int64_t batch_size) {
  DecodeOptions longer = decode;
  longer.max_new_tokens = length;
  std::map<int64_t, std::vector<int64_t>> continuations;
  const std::span<const SequenceRequest> all(requests);
  for (size_t first = 0; first < all.size(); first += batch_size) {
    const auto batch = all.subspan(first, std::min(all.size() - first, static_cast<size_t>(batch_size)));
    for (SequenceResult& result : nonspec_batch_generate(target, batch, longer))
      continuations[result.sequence_index] = std::move(result.tokens);
  }
  return continuations;
}

}  // namespace specgate::cli
