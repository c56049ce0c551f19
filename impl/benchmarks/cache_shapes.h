#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include "impl/model/kv_cache.h"

namespace specgate::benchmarks {

// Caches shaped like a Qwen3 model's (8 KV heads of 128) in float32, with fewer layers than
// the real ones: realignment costs the same per layer, so bytes per second carry over.
constexpr int64_t kLayers = 4, kKvHeads = 8, kHeadDim = 128;
constexpr int64_t kElementBytes = sizeof(float);

inline KVCache filled_cache(int64_t batch, int64_t length) {
  KVCache cache(kLayers, batch, kKvHeads, length, kHeadDim, at::TensorOptions().dtype(at::kFloat));
  cache.reshape(batch, length);
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    cache.keys(layer).uniform_();
    cache.values(layer).uniform_();
  }
  return cache;
}

// A re-layout: row i of the new layout takes runs[i] at slot to_first[i].
struct Relayout {
  std::vector<SlotRun> runs;
  std::vector<int64_t> to_first;
};

// An EQSPEC round's re-layout: every row accepted between 1 and K + 1 tokens, so rows move
// by up to K slots; the cache keeps its length.
inline Relayout round_relayout(int64_t batch, int64_t length, int64_t k, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int64_t> padding(0, k);
  Relayout relayout;
  for (int64_t row = 0; row < batch; ++row) {
    const int64_t old_padding = padding(random), new_padding = padding(random);
    relayout.runs.push_back({row, old_padding, length - std::max(old_padding, new_padding)});
    relayout.to_first.push_back(new_padding);
  }
  return relayout;
}

// Bytes a re-layout must at least move: one read and one write of every kept entry, keys and
// values, every layer.
inline int64_t moved_bytes(const std::vector<SlotRun>& runs) {
  int64_t entries = 0;
  for (const SlotRun& run : runs) entries += run.count;
  return 2 * 2 * kLayers * entries * kKvHeads * kHeadDim * kElementBytes;
}

// The machine's ceiling for a re-layout: the bytes of a batch x length cache (keys and values,
// every layer) copied between two preallocated buffers. Args: batch, length.
inline void BM_CopyBandwidth(benchmark::State& state) {
  const int64_t batch = state.range(0), length = state.range(1);
  const auto options = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor source = at::rand({2 * kLayers, batch, kKvHeads, length, kHeadDim}, options);
  at::Tensor target = at::zeros_like(source);
  for (auto _ : state) target.copy_(source);
  state.SetBytesProcessed(state.iterations() * 2 * source.numel() * kElementBytes);
}

}  // namespace specgate::benchmarks
