#include "conformance/bench/bench_runner.h"

#include <algorithm>
#include <string>

#include "conformance/bench/peak_memory.h"
#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/phase_timer.h"

namespace specgate::cli {
namespace {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(at);
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (at - static_cast<double>(below)) * (values[above] - values[below]);
}

// One run over every request; `flag`, when given, is switched on in the decode options.
EngineTally run_once(const BenchSetup& setup, Engine engine, int64_t batch_size, const ExspecOptions& exspec,
                     bool DecodeOptions::*flag = nullptr) {
  EngineSpec spec{.engine = engine, .target = setup.target, .drafting = setup.drafting, .draft = setup.draft,
                  .script = setup.script ? &*setup.script : nullptr,
                  .decoder = {.decode = setup.decode, .batch_size = batch_size, .exspec = exspec},
                  .tree = engine == Engine::kTree ? setup.tree : nullptr};
  if (flag != nullptr) spec.decoder.decode.*flag = true;
  EngineTally tally;
  decode_requests(spec, setup.requests, tally, [](SequenceResult) {});
  return tally;
}

}  // namespace

std::vector<ScheduledRun> interleaved_schedule(size_t cases, int64_t repeat) {
  std::vector<ScheduledRun> schedule;
  for (int64_t r = 0; r < repeat; ++r) {
    for (size_t c = 0; c < cases; ++c) schedule.push_back({.case_index = c, .repeat = r});
  }
  return schedule;
}

std::vector<Measurement> measure(const BenchSetup& setup, const std::vector<BenchCase>& cases, int64_t repeat,
                                 const std::function<void(const ScheduledRun&)>& on_run) {
  std::vector<Measurement> measurements;
  for (const BenchCase& c : cases) {
    Measurement& m = measurements.emplace_back(Measurement{.engine = c.engine, .batch_size = c.batch_size});
    if (!is_exspec(c.engine)) continue;
    m.exspec.batch_size = c.batch_size;
    m.exspec.window = setup.window_per_batch * c.batch_size;
    if (c.engine == Engine::kExspecAging)
      m.exspec.max_wait_steps = std::max(setup.max_wait, smallest_feasible_wait(m.exspec.window, c.batch_size));
    validate(m.exspec);
  }
  const c10::Device device = setup.target->options().device();
  // Throughput runs neither wait for the device between phases nor count what they dispatch.
  std::vector<std::vector<EngineTally>> runs(cases.size());
  for (const ScheduledRun& run : interleaved_schedule(cases.size(), repeat)) {
    on_run(run);
    Measurement& m = measurements[run.case_index];
    reset_peak_memory(device);
    runs[run.case_index].push_back(run_once(setup, m.engine, m.batch_size, m.exspec));
    m.run_seconds.push_back(runs[run.case_index].back().seconds);
    const PeakMemory peak = peak_memory(device);
    m.peak_memory_bytes = std::max(m.peak_memory_bytes, peak.bytes);
    m.peak_memory_source = peak.source;
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    Measurement& m = measurements[c];
    std::vector<EngineTally>& tallies = runs[c];
    std::vector<size_t> order(tallies.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tallies[a].seconds < tallies[b].seconds; });
    // The median's counters come from the faster of the two middle runs when they are even.
    const size_t middle = (order.size() - 1) / 2;
    EngineTally& median = tallies[order[middle]];
    m.seconds = order.size() % 2 == 1 ? median.seconds : (median.seconds + tallies[order[middle + 1]].seconds) / 2;
    m.tokens = median.tokens;
    m.stats = std::move(median.stats);
    m.exspec_stats = median.exspec_stats;
    // Where charging a phase means waiting for the device, the phases come from a run of their own.
    if (PhaseTimer::waits_for(device)) {
      const DecodeStats phased = run_once(setup, m.engine, m.batch_size, m.exspec, &DecodeOptions::time_phases).stats;
      m.stats.draft_seconds = phased.draft_seconds;
      m.stats.verify_seconds = phased.verify_seconds;
      m.stats.realign_seconds = phased.realign_seconds;
      m.stats.other_seconds = phased.other_seconds;
    }
    // Counting slows a run down; the counts, deterministic, come from a run of their own.
    const DecodeStats counted = run_once(setup, m.engine, m.batch_size, m.exspec, &DecodeOptions::count_dispatches).stats;
    m.operators_per_round = counted.operators_per_round();
    m.host_syncs_per_round = counted.host_syncs_per_round();
    std::vector<double> latencies;
    for (const SequenceLatency& latency : m.stats.latencies) latencies.push_back(latency.seconds);
    m.latency_p50_s = quantile(latencies, 0.50);
    m.latency_p99_s = quantile(latencies, 0.99);
  }
  return measurements;
}

std::map<int64_t, std::vector<int64_t>> greedy_continuations(const Transformer& target,
                                                             const std::vector<SequenceRequest>& requests,
                                                             const DecodeOptions& decode, int64_t length,
                                                             int64_t batch_size) {
  EngineSpec spec{.engine = Engine::kNonspecBatch, .target = &target,
                  .decoder = {.decode = decode, .batch_size = batch_size}};
  spec.decoder.decode.max_new_tokens = length;
  std::map<int64_t, std::vector<int64_t>> continuations;
  EngineTally tally;
  decode_requests(spec, requests, tally, [&](SequenceResult result) {
    continuations[result.sequence_index] = std::move(result.tokens);
  });
  return continuations;
}

}  // namespace specgate::cli
