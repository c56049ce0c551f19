// What one forward pass of the fixture pair costs on this machine: the target and the draft,
// at batch B, for T new tokens over a cache already holding a window of context.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>

#include "fixtures/models/fixture_pair.h"
#include "impl/common/cpu_configuration.h"
#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"

namespace specgate::benchmarks {
namespace {

constexpr int64_t kContext = 200;

void run_pass(benchmark::State& state, const ModelConfig& config) {
  configure_cpu();
  const int64_t batch = state.range(0), steps = state.range(1);
  const Transformer model(config, random_weights(config, at::TensorOptions().dtype(at::kFloat), 0));
  const auto ids = at::TensorOptions().dtype(at::kLong);
  KVCache cache = model.make_cache(batch, kContext + steps);
  model.forward(at::randint(250, {batch, kContext}, ids), at::arange(kContext, ids).expand({batch, kContext}),
                at::ones({batch, kContext}, ids.dtype(at::kBool)), &cache);
  const at::Tensor tokens = at::randint(250, {batch, steps}, ids);
  const at::Tensor positions = at::arange(kContext, kContext + steps, ids).expand({batch, steps});
  const at::Tensor valid = at::ones({batch, kContext + steps}, ids.dtype(at::kBool));
  for (auto _ : state) {
    cache.truncate(kContext);
    benchmark::DoNotOptimize(model.logits(model.forward(tokens, positions, valid, &cache)).argmax(-1));
  }
}

void BM_TargetPass(benchmark::State& state) { run_pass(state, fixture_target_config()); }
void BM_DraftPass(benchmark::State& state) { run_pass(state, fixture_draft_config()); }

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t batch : {1, 8}) {
    for (int64_t steps : {1, 5, 256}) b->Args({batch, steps});
  }
  b->ArgNames({"batch", "tokens"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK(BM_TargetPass)->Apply(shapes);
BENCHMARK(BM_DraftPass)->Apply(shapes);

}  // namespace
}  // namespace specgate::benchmarks
