#include <iostream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "impl/common/host_transfer.h"
#include "impl/decoding/dispatch_counter.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/exspec.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using namespace specgate::test_support;

TEST(DispatchCounter, CountsOperatorsAndTheReadsThatWaitForTheDevice) {
  const at::Tensor x = at::arange(6, kFloat64);
  DispatchCounter outer;
  const at::Tensor y = x * 2 + 1;
  EXPECT_EQ(outer.counts().host_syncs, 0);
  EXPECT_TRUE(upload(y, x.device()).is_same(y));  // on the host, nothing to copy
  {
    DispatchCounter inner;
    EXPECT_EQ(y.sum().item<double>(), 36.0);
    EXPECT_EQ(download(y).data_ptr<double>()[5], 11.0);
    EXPECT_EQ(inner.counts().host_syncs, 2);
  }
  EXPECT_EQ(outer.counts().host_syncs, 2);
  EXPECT_EQ(outer.counts().operators, 5);  // mul, add, sum, item, to: not the ops inside them
}

enum class Engine { kEqspec, kExspec };

DecodeStats counted_run(Engine engine, int64_t batch, bool greedy) {
  const std::vector<SequenceRequest> requests = mixed_requests(batch, 3);
  DecodeOptions options = greedy_options(4, 10);
  options.check_invariants = false;
  options.count_dispatches = true;
  if (!greedy) options.sampling = {.temperature = 0.8, .top_k = 30, .top_p = 0.9, .seed = 2};
  // Scripted acceptance, so that rows accept different numbers of drafts and move every round.
  const ScriptedDrafts script = oracle_script(requests, options, "random");
  ModelDrafter drafter(models().draft, &script);
  DecodeStats stats;
  if (engine == Engine::kEqspec) {
    eqspec_generate(models().target, drafter, requests, options, &stats);
  } else {
    exspec_generate(models().target, drafter, requests, options, {.batch_size = batch, .window = batch}, &stats);
  }
  return stats;
}

// A round is one copy back from the device (verification's verdicts), whatever the batch size,
// and dispatches the same operators at batch 16 as at batch 1: no per-row work on the device.
TEST(DispatchCounts, RoundsSyncOnceAndDispatchAsManyOperatorsAtAnyBatchSize) {
  for (const Engine engine : {Engine::kEqspec, Engine::kExspec}) {
    for (const bool greedy : {true, false}) {
      const DecodeStats one = counted_run(engine, 1, greedy), sixteen = counted_run(engine, 16, greedy);
      const std::string name = std::string(engine == Engine::kEqspec ? "eqspec" : "exspec") +
                               (greedy ? " greedy" : " sampled");
      SCOPED_TRACE(name);
      std::cout << "[dispatches] " << name << ": batch 1: " << one.operators_per_round() << " operators and "
                << one.host_syncs_per_round() << " syncs per round over " << one.counted_rounds
                << " rounds; batch 16: " << sixteen.operators_per_round() << " and " << sixteen.host_syncs_per_round()
                << " over " << sixteen.counted_rounds << "\n";
      ASSERT_GT(one.counted_rounds, 0);
      ASSERT_GT(sixteen.counted_rounds, 0);
      EXPECT_LE(sixteen.host_syncs_per_round(), greedy ? 2.0 : 3.0);
      EXPECT_LE(one.host_syncs_per_round(), greedy ? 2.0 : 3.0);
      EXPECT_LE(sixteen.operators_per_round(), 1.1 * one.operators_per_round());
    }
  }
}

}  // namespace
}  // namespace specgate
