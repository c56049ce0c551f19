// One layer's attention in the real model's shape (9 query heads on 3 key-value heads of 64,
// float32, one thread) for a decode step (T = 1), a verification pass (T = 5) and a token tree
// (T = 13) over S cached keys: few_query_attention against libtorch's attention, which the
// transformer calls with each group's heads folded into the query axis.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "impl/model/few_query_attention.h"

namespace specgate::benchmarks {
namespace {

constexpr int64_t kHeads = 9, kKvHeads = 3, kHeadDim = 64;

struct Problem {
  at::Tensor q, k, v, mask;
};

Problem problem(const benchmark::State& state) {
  at::set_num_threads(1);
  at::manual_seed(0);
  const int64_t batch = state.range(0), steps = state.range(1), keys = state.range(2);
  return {at::randn({batch, kHeads, steps, kHeadDim}), at::randn({batch, kKvHeads, keys, kHeadDim}),
          at::randn({batch, kKvHeads, keys, kHeadDim}), at::zeros({batch, 1, 1, steps, keys})};
}

void BM_FewQueryAttention(benchmark::State& state) {
  const Problem p = problem(state);
  for (auto _ : state) benchmark::DoNotOptimize(few_query_attention(p.q, p.k, p.v, p.mask));
}

void BM_LibtorchAttention(benchmark::State& state) {
  const Problem p = problem(state);
  const int64_t batch = p.q.size(0), steps = p.q.size(2), keys = p.k.size(2), group = kHeads / kKvHeads;
  for (auto _ : state) {
    const at::Tensor q = p.q.reshape({batch, kKvHeads, group * steps, kHeadDim});
    const at::Tensor mask = p.mask.expand({batch, 1, group, steps, keys}).reshape({batch, 1, group * steps, keys});
    benchmark::DoNotOptimize(at::scaled_dot_product_attention(q, p.k, p.v, mask)
                                 .reshape({batch, kHeads, steps, kHeadDim})
                                 .transpose(1, 2)
                                 .reshape({batch, steps, kHeads * kHeadDim}));
  }
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{1, 8}, {1, 5, 13}, {200, 1000}})->ArgNames({"batch", "tokens", "keys"})->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_FewQueryAttention)->Apply(shapes);
BENCHMARK(BM_LibtorchAttention)->Apply(shapes);

}  // namespace
}  // namespace specgate::benchmarks
