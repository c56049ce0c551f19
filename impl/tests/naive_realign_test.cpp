// The published decoders' re-layout, kept as bench's baseline, leaves every kept slot where
// KVCache::relayout puts it, zeros in the padding, and the cache reshaped.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "impl/decoding/naive_realign.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using test_support::models;

// A cache of the target, 3 rows of 6 slots of random keys and values.
KVCache random_cache() {
  KVCache cache = models().target.make_cache(3, 6);
  cache.reshape(3, 6);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(5);
  for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
    cache.keys(layer).copy_(at::randn(cache.keys(layer).sizes(), generator, cache.keys(layer).options()));
    cache.values(layer).copy_(at::randn(cache.values(layer).sizes(), generator, cache.values(layer).options()));
  }
  return cache;
}

TEST(NaiveRealign, KeepsWhatRelayoutKeepsWhereItPutsItAndZerosAroundIt) {
  // Row 2's slots 1-5 become row 0 from slot 3, row 0's slots 2-5 become row 1 from slot 5;
  // 9 slots, more than the cache holds.
  const std::vector<SlotRun> runs = {{.row = 2, .first = 1, .count = 5}, {.row = 0, .first = 2, .count = 4}};
  const std::vector<int64_t> to_first = {3, 5};
  KVCache naive = random_cache(), relaid = random_cache();
  naive_realign(naive, runs, to_first, 9);
  relaid.relayout(runs, to_first, 9);
  ASSERT_EQ(naive.batch_size(), 2);
  ASSERT_EQ(naive.length(), 9);
  for (int64_t layer = 0; layer < naive.num_layers(); ++layer) {
    for (const auto& [name, got, expected] : {std::tuple{"K", naive.keys(layer), relaid.keys(layer)},
                                              std::tuple{"V", naive.values(layer), relaid.values(layer)}}) {
      for (size_t i = 0; i < runs.size(); ++i) {
        const int64_t row = static_cast<int64_t>(i), count = runs[i].count;
        EXPECT_TRUE(got[row].narrow(1, to_first[i], count).equal(expected[row].narrow(1, to_first[i], count)))
            << name << " layer " << layer << " row " << row;
        EXPECT_TRUE(got[row].narrow(1, 0, to_first[i]).eq(0).all().item<bool>()) << "padding of row " << row;
        const int64_t tail = 9 - to_first[i] - count;
        EXPECT_TRUE(got[row].narrow(1, to_first[i] + count, tail).eq(0).all().item<bool>()) << "tail of row " << row;
      }
    }
  }
  // And the kept slots are the source's own.
  const KVCache source = random_cache();
  EXPECT_TRUE(naive.keys(0)[0].narrow(1, 3, 5).equal(source.keys(0)[2].narrow(1, 1, 5)));
}

TEST(NaiveRealign, OneDestinationPerRun) {
  KVCache cache = random_cache();
  EXPECT_THROW(naive_realign(cache, {{.row = 0, .first = 0, .count = 2}}, {0, 1}, 4), c10::Error);
}

}  // namespace
}  // namespace specgate
