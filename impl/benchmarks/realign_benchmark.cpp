// Realignment of the KV caches after an EQSPEC round, in bytes moved per second: the cache's
// own re-layout (what EQSPEC does; on the CPU, every row shifted within its buffer), the per-row
// concatenation of published decoders, and a plain copy of a whole cache, the machine's ceiling.
#include <benchmark/benchmark.h>

#include "impl/benchmarks/cache_shapes.h"
#include "impl/decoding/naive_realign.h"

namespace specgate::benchmarks {
namespace {

constexpr int64_t kDraftTokens = 5;

// The runs of the rows that change place: a row whose padding stays needs no move.
std::vector<SlotRun> moving_runs(const Relayout& relayout) {
  std::vector<SlotRun> moving;
  for (size_t i = 0; i < relayout.runs.size(); ++i)
    if (relayout.runs[i].first != relayout.to_first[i]) moving.push_back(relayout.runs[i]);
  return moving;
}

void BM_GatherRealign(benchmark::State& state) {
  const int64_t batch = state.range(0), length = state.range(1);
  KVCache cache = filled_cache(batch, length);
  const Relayout relayout = round_relayout(batch, length, kDraftTokens, 1);
  for (auto _ : state) cache.gather(cache, relayout.runs, relayout.to_first);
  state.SetBytesProcessed(state.iterations() * moved_bytes(moving_runs(relayout)));
}

void BM_NaiveRealign(benchmark::State& state) {
  const int64_t batch = state.range(0), length = state.range(1);
  KVCache cache = filled_cache(batch, length);
  const Relayout relayout = round_relayout(batch, length, kDraftTokens, 1);
  for (auto _ : state) naive_realign(cache, relayout.runs, relayout.to_first, length);
  state.SetBytesProcessed(state.iterations() * moved_bytes(moving_runs(relayout)));
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t batch : {8, 16}) {
    for (int64_t length : {512, 2048}) b->Args({batch, length});
  }
  b->ArgNames({"batch", "length"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_GatherRealign)->Apply(shapes);
BENCHMARK(BM_NaiveRealign)->Apply(shapes);
BENCHMARK(BM_CopyBandwidth)->Apply(shapes);

}  // namespace
}  // namespace specgate::benchmarks
