// What one forward pass of the fixture pair costs on this machine: the target and the draft,
// at batch B, for T new tokens over a cache already holding a window of context, and the
// target's pass over a tree of T positions. With
// SPECGATE_FORWARD_CHECKPOINT=DIR, also that checkpoint's passes in float32 over T = 1..5
// after 200 or 1,000 cached tokens, on 1 or 2 intra-op threads: a verification pass of T
// positions against the one decode step it stands in for.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "fixtures/models/fixture_pair.h"
#include "impl/checkpoint/model_io.h"
#include "impl/decoding/token_tree.h"
#include "impl/common/cpu_configuration.h"
#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"

namespace specgate::benchmarks {
namespace {

constexpr int64_t kContext = 200;

void run_pass(benchmark::State& state, const Transformer& model, int64_t context = kContext, int threads = 1) {
  configure_cpu();
  at::set_num_threads(threads);
  const int64_t batch = state.range(0), steps = state.range(1);
  const auto ids = at::TensorOptions().dtype(at::kLong);
  KVCache cache = model.make_cache(batch, context + steps);
  model.forward(at::randint(250, {batch, context}, ids), at::arange(context, ids).expand({batch, context}),
                at::ones({batch, context}, ids.dtype(at::kBool)), &cache);
  const at::Tensor tokens = at::randint(250, {batch, steps}, ids);
  const at::Tensor positions = at::arange(context, context + steps, ids).expand({batch, steps});
  const at::Tensor valid = at::ones({batch, context + steps}, ids.dtype(at::kBool));
  for (auto _ : state) {
    cache.truncate(context);
    benchmark::DoNotOptimize(model.logits(model.forward(tokens, positions, valid, &cache)).argmax(-1));
  }
}

// A tree round's target pass: the root and a star of `nodes - 1` children (every node at depth 1
// or 0, each seeing the root and itself), with its per-query mask, next to the chain pass of
// as many positions (BM_TargetPass): what the mask costs beyond the positions.
void BM_TreePass(benchmark::State& state) {
  configure_cpu();
  const Transformer model(fixture_target_config(), random_weights(fixture_target_config(), at::TensorOptions().dtype(at::kFloat), 0));
  const int64_t batch = state.range(0), steps = state.range(1);
  const auto ids = at::TensorOptions().dtype(at::kLong);
  KVCache cache = model.make_cache(batch, kContext + steps);
  model.forward(at::randint(250, {batch, kContext}, ids), at::arange(kContext, ids).expand({batch, kContext}),
                at::ones({batch, kContext}, ids.dtype(at::kBool)), &cache);
  const std::vector<int64_t> star(static_cast<size_t>(steps - 1), -1);
  const TreeShape shape(star);
  const at::Tensor tokens = at::randint(250, {batch, steps}, ids);
  const at::Tensor depths = at::tensor(shape.depth_offsets(), ids);
  const at::Tensor positions = (kContext + depths).expand({batch, steps});
  const at::Tensor valid =
      at::cat({at::ones({steps, kContext}, ids.dtype(at::kBool)), shape.visibility()}, 1).unsqueeze(0).expand({batch, steps, kContext + steps});
  for (auto _ : state) {
    cache.truncate(kContext);
    benchmark::DoNotOptimize(model.logits(model.forward(tokens, positions, valid, &cache)).argmax(-1));
  }
}

void run_pass(benchmark::State& state, const ModelConfig& config) {
  run_pass(state, Transformer(config, random_weights(config, at::TensorOptions().dtype(at::kFloat), 0)));
}

void BM_TargetPass(benchmark::State& state) { run_pass(state, fixture_target_config()); }
void BM_DraftPass(benchmark::State& state) { run_pass(state, fixture_draft_config()); }

[[maybe_unused]] const bool kCheckpointPasses = [] {
  const char* dir = std::getenv("SPECGATE_FORWARD_CHECKPOINT");
  if (dir == nullptr) return false;
  const std::filesystem::path folder(dir);
  benchmark::RegisterBenchmark("BM_CheckpointPass", [folder](benchmark::State& state) {
    run_pass(state, load_transformer(folder, at::kFloat, at::kCPU), state.range(2), static_cast<int>(state.range(3)));
  })
      ->ArgsProduct({{1, 8}, {1, 2, 3, 4, 5}, {200, 1000}, {1, 2}})
      ->ArgNames({"batch", "tokens", "context", "threads"})
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  return true;
}();

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t batch : {1, 8}) {
    for (int64_t steps : {1, 5, 256}) b->Args({batch, steps});
  }
  b->ArgNames({"batch", "tokens"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK(BM_TargetPass)->Apply(shapes);
BENCHMARK(BM_DraftPass)->Apply(shapes);
BENCHMARK(BM_TargetPass)->ArgsProduct({{1, 8}, {9, 13}})->ArgNames({"batch", "tokens"})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TreePass)->ArgsProduct({{1, 8}, {5, 9, 13}})->ArgNames({"batch", "tokens"})->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace specgate::benchmarks
