// EXSPEC's batch formation: choosing B sequences of a window, and copying their caches from
// the pool into the batch (one batched gather per layer), in bytes moved per second against a
// plain copy of the same bytes.
#include <random>

#include <benchmark/benchmark.h>

#include "impl/benchmarks/cache_shapes.h"
#include "impl/decoding/batch_scheduler.h"

namespace specgate::benchmarks {
namespace {

std::vector<WindowEntry> random_window(int64_t size, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int64_t> length(100, 140), waited(0, 3);
  std::vector<WindowEntry> window;
  for (int64_t i = 0; i < size; ++i) window.push_back({length(random), waited(random)});
  return window;
}

void BM_ChooseBatch(benchmark::State& state) {
  const int64_t batch = state.range(0), window_size = state.range(1), max_wait = state.range(2);
  const std::vector<WindowEntry> window = random_window(window_size, 3);
  for (auto _ : state) benchmark::DoNotOptimize(choose_batch(window, batch, max_wait));
  state.SetItemsProcessed(state.iterations());
}

// B rows of a pool of 4B sequences copied into a batch cache, shifted to a common width.
void BM_PoolToBatch(benchmark::State& state) {
  const int64_t batch = state.range(0), length = state.range(1);
  const KVCache pool = filled_cache(4 * batch, length);
  KVCache batch_cache = filled_cache(batch, length);
  Relayout relayout;
  for (int64_t row = 0; row < batch; ++row) {
    relayout.runs.push_back({4 * row, 0, length - row % 4});
    relayout.to_first.push_back(row % 4);
  }
  for (auto _ : state) batch_cache.gather(pool, relayout.runs, relayout.to_first);
  state.SetBytesProcessed(state.iterations() * moved_bytes(relayout.runs));
}

BENCHMARK(BM_ChooseBatch)
    ->ArgNames({"batch", "window", "max_wait"})
    ->Args({8, 16, 0})
    ->Args({8, 16, 3})
    ->Args({16, 64, 0})
    ->Args({16, 64, 7})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PoolToBatch)->ArgNames({"batch", "length"})->Args({8, 512})->Args({16, 2048})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CopyBandwidth)->ArgNames({"batch", "length"})->Args({8, 512})->Args({16, 2048})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace specgate::benchmarks
