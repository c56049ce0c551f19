#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "impl/model/kv_cache.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {
namespace {

using test_support::kDouble;
using test_support::kLong;

// K of row b, slot s holds 100 * b + s in every element; V holds the negation.
KVCache numbered_cache(int64_t batch, int64_t slots, int64_t capacity, std::optional<int64_t> attended = std::nullopt) {
  KVCache cache(/*num_layers=*/2, batch, /*num_kv_heads=*/2, capacity, /*head_dim=*/3, kDouble, attended);
  const at::Tensor numbers = (at::arange(batch, kDouble).view({batch, 1, 1, 1}) * 100 +
                              at::arange(slots, kDouble).view({1, 1, slots, 1}))
                                 .expand({batch, 2, slots, 3});
  for (int64_t layer = 0; layer < 2; ++layer) cache.append(layer, numbers, -numbers);
  cache.advance(slots);
  return cache;
}

double key_number(const KVCache& cache, int64_t layer, int64_t row, int64_t slot) {
  const at::Tensor k = cache.key_at(layer, row, slot);
  EXPECT_TRUE(at::equal(cache.value_at(layer, row, slot), -k));
  EXPECT_TRUE(at::equal(k, at::full_like(k, k[0][0].item<double>())));
  return k[0][0].item<double>();
}

TEST(KVCache, AppendWritesAtTheCommonLengthAndReturnsEverySlot) {
  KVCache cache = numbered_cache(2, 3, 8);
  const at::Tensor more = at::full({2, 2, 2, 3}, 7.0, kDouble);
  const auto [keys, values] = cache.append(0, more, -more);
  EXPECT_EQ(keys.size(2), 5);
  EXPECT_EQ(cache.length(), 3);  // not advanced until every layer wrote
  cache.append(1, more, -more);
  cache.advance(2);
  EXPECT_EQ(cache.length(), 5);
  EXPECT_EQ(key_number(cache, 1, 1, 2), 102);
  EXPECT_EQ(key_number(cache, 1, 1, 4), 7);
}

TEST(KVCache, GrowsWhenFull) {
  KVCache cache = numbered_cache(2, 3, 3);
  const at::Tensor more = at::full({2, 2, 4, 3}, 9.0, kDouble);
  for (int64_t layer = 0; layer < 2; ++layer) cache.append(layer, more, -more);
  cache.advance(4);
  EXPECT_GE(cache.slot_capacity(), 7);
  EXPECT_EQ(key_number(cache, 0, 1, 2), 102);
  EXPECT_EQ(key_number(cache, 1, 0, 6), 9);
}

TEST(KVCache, GatherMovesEachRowByItsOwnRunInPlace) {
  KVCache cache = numbered_cache(2, 4, 8);
  const int64_t bytes = cache.bytes();
  // Row 0 shifts right by two (two padding slots in front); row 1 keeps slots 2-3 at 0-1.
  const std::vector<SlotRun> runs = {{.row = 0, .first = 0, .count = 4}, {.row = 1, .first = 2, .count = 2}};
  cache.reshape(2, 6);
  cache.gather(cache, runs, std::vector<int64_t>{2, 0});
  EXPECT_EQ(cache.length(), 6);
  for (int64_t layer = 0; layer < 2; ++layer) {
    EXPECT_EQ(key_number(cache, layer, 0, 2), 0);
    EXPECT_EQ(key_number(cache, layer, 0, 5), 3);
    EXPECT_EQ(key_number(cache, layer, 1, 0), 102);
    EXPECT_EQ(key_number(cache, layer, 1, 1), 103);
    // Padding and tail slots hold finite values, so that masked keys weigh nothing.
    EXPECT_TRUE(at::isfinite(cache.keys(layer)).all().item<bool>());
    EXPECT_TRUE(at::isfinite(cache.values(layer)).all().item<bool>());
  }
  // On the CPU, rows that keep their order shift within their own buffer: no spare.
  EXPECT_EQ(cache.bytes(), bytes);
}

// Every element of row b (K, V) different from every other: slot s of head h holds
// ((b * H + h) * slots + s) * D + d, V its negation less a half.
KVCache distinct_cache(int64_t batch, int64_t slots, int64_t capacity) {
  KVCache cache(/*num_layers=*/2, batch, /*num_kv_heads=*/2, capacity, /*head_dim=*/3, kDouble);
  const at::Tensor numbers = at::arange(batch * 2 * slots * 3, kDouble).view({batch, 2, slots, 3});
  for (int64_t layer = 0; layer < 2; ++layer) cache.append(layer, numbers + layer, -numbers - 0.5);
  cache.advance(slots);
  return cache;
}

TEST(KVCache, ShiftInPlaceLaysOutTheBytesOfAGatherFromAnotherCache) {
  // Row 0 stays, row 1 moves left by two (its last slots read past the capacity), row 2 right (its
  // first slots read before slot 0), row 3 is dropped, row 4 moves up a row, row 5 is all padding.
  const std::vector<SlotRun> runs = {{0, 2, 4}, {1, 2, 5}, {2, 0, 4}, {4, 2, 4}, {5, 0, 0}};
  const std::vector<int64_t> to_first = {2, 0, 3, 2, 8};
  KVCache shifted = distinct_cache(6, 8, 8);
  const int64_t bytes = shifted.bytes();
  shifted.reshape(5, 8);
  shifted.gather(shifted, runs, to_first);
  const KVCache source = distinct_cache(6, 8, 8);
  KVCache gathered = distinct_cache(6, 8, 8);
  gathered.reshape(5, 8);
  gathered.gather(source, runs, to_first);
  for (int64_t layer = 0; layer < 2; ++layer) {
    EXPECT_TRUE(at::equal(shifted.keys(layer), gathered.keys(layer))) << "layer " << layer;
    EXPECT_TRUE(at::equal(shifted.values(layer), gathered.values(layer))) << "layer " << layer;
  }
  const at::Tensor keys = shifted.keys(0);
  EXPECT_EQ(keys[1][0][4][0].item<double>(), (2 * 8 + 6) * 3);  // row 1, slot 6 before
  EXPECT_EQ(keys[1][0][6][0].item<double>(), (2 * 8 + 7) * 3);  // row 1, last slot, twice
  EXPECT_EQ(keys[1][0][7][0].item<double>(), (2 * 8 + 7) * 3);
  EXPECT_EQ(keys[2][1][0][0].item<double>(), (5 * 8 + 0) * 3);  // row 2, head 1, slot 0 before
  EXPECT_EQ(keys[2][1][3][0].item<double>(), (5 * 8 + 0) * 3);
  EXPECT_EQ(keys[3][0][2][2].item<double>(), (8 * 8 + 2) * 3 + 2);  // row 4, slot 2 before
  EXPECT_EQ(shifted.bytes(), bytes);
}

TEST(KVCache, RelayoutKeepsRunsInPlaceAndMovesTheOthers) {
  KVCache cache = numbered_cache(3, 4, 8);
  const int64_t bytes = cache.bytes();
  // Row 2 leaves; rows 0 and 1 keep their slots.
  cache.relayout(std::vector<SlotRun>{{0, 1, 3}, {1, 0, 4}}, std::vector<int64_t>{1, 0}, 4);
  EXPECT_EQ(cache.batch_size(), 2);
  EXPECT_EQ(cache.length(), 4);
  EXPECT_EQ(key_number(cache, 1, 0, 3), 3);
  EXPECT_EQ(key_number(cache, 1, 1, 0), 100);
  EXPECT_EQ(cache.bytes(), bytes) << "no spare buffer for runs already in place";

  cache.relayout(std::vector<SlotRun>{{0, 1, 3}, {1, 0, 4}}, std::vector<int64_t>{1, 0}, 5);
  EXPECT_EQ(cache.length(), 5);
  EXPECT_EQ(key_number(cache, 0, 1, 3), 103);
  // The rows swap, each run one slot on: a gather through the spare buffer.
  cache.relayout(std::vector<SlotRun>{{1, 1, 3}, {0, 1, 3}}, std::vector<int64_t>{2, 2}, 5);
  EXPECT_EQ(key_number(cache, 0, 0, 2), 101);
  EXPECT_EQ(key_number(cache, 0, 1, 4), 3);
  EXPECT_GT(cache.bytes(), bytes);
}

TEST(KVCache, GatherSelectsAndReordersRows) {
  KVCache cache = numbered_cache(3, 2, 4);
  cache.reshape(2, 2);
  cache.gather(cache, std::vector<SlotRun>{{2, 0, 2}, {0, 0, 2}}, std::vector<int64_t>{0, 0});
  EXPECT_EQ(cache.batch_size(), 2);
  EXPECT_EQ(key_number(cache, 0, 0, 1), 201);
  EXPECT_EQ(key_number(cache, 1, 1, 0), 0);
  EXPECT_EQ(cache.keys(0).sizes(), at::IntArrayRef({2, 2, 2, 3}));
  // Reordered rows go through one spare layer buffer.
  EXPECT_EQ(cache.bytes(), numbered_cache(3, 2, 4).bytes() * 3 / 2);
}

TEST(KVCache, ScatterStoresRunsUnpaddedAndGatherBringsThemBack) {
  const KVCache batch = numbered_cache(2, 5, 8);
  KVCache pool = numbered_cache(4, 1, 8);
  pool.scatter(batch, std::vector<SlotRun>{{0, 2, 3}, {1, 1, 2}}, std::vector<int64_t>{3, 1});
  pool.reshape(4, 3);
  EXPECT_EQ(key_number(pool, 0, 3, 0), 2);
  EXPECT_EQ(key_number(pool, 1, 3, 2), 4);
  EXPECT_EQ(key_number(pool, 0, 1, 1), 102);
  EXPECT_EQ(key_number(pool, 0, 0, 0), 0);  // untouched
  EXPECT_EQ(key_number(pool, 0, 2, 0), 200);

  KVCache next = numbered_cache(3, 4, 8);
  next.reshape(3, 4);
  // Row 0 stays; rows 1 and 2 come from pool slots 3 and 1, padded by one and two.
  next.gather(pool, std::vector<SlotRun>{{3, 0, 3}, {1, 0, 2}}, std::vector<int64_t>{1, 2}, /*first_row=*/1);
  EXPECT_EQ(key_number(next, 1, 0, 3), 3);
  EXPECT_EQ(key_number(next, 1, 1, 1), 2);
  EXPECT_EQ(key_number(next, 0, 1, 3), 4);
  EXPECT_EQ(key_number(next, 1, 2, 2), 101);
  EXPECT_EQ(key_number(next, 0, 2, 3), 102);
  EXPECT_EQ(next.bytes(), numbered_cache(3, 4, 8).bytes());  // no spare for a gather from another cache
}

TEST(KVCache, AWindowedCacheMovesOnlyTheSlotsAPassCanStillRead) {
  KVCache cache = numbered_cache(2, 6, 8, /*attended=*/2);
  EXPECT_EQ(cache.first_attended_slot(), 4);
  // Row 0 shifts right by one; row 1 stays. Only slots 4 and 5 are written.
  cache.gather(cache, std::vector<SlotRun>{{0, 0, 5}, {1, 1, 5}}, std::vector<int64_t>{1, 1});
  for (int64_t layer = 0; layer < 2; ++layer) {
    EXPECT_EQ(key_number(cache, layer, 0, 4), 3);
    EXPECT_EQ(key_number(cache, layer, 0, 5), 4);
    EXPECT_EQ(key_number(cache, layer, 1, 5), 105);
    EXPECT_NE(key_number(cache, layer, 0, 2), 1);  // left stale: no pass reads it again
    EXPECT_TRUE(at::isfinite(cache.keys(layer)).all().item<bool>());
  }

  KVCache pool = numbered_cache(1, 6, 8, /*attended=*/2);
  pool.scatter(cache, std::vector<SlotRun>{{0, 1, 5}}, std::vector<int64_t>{0});
  EXPECT_EQ(key_number(pool, 1, 0, 3), 3);
  EXPECT_EQ(key_number(pool, 1, 0, 4), 4);
  EXPECT_EQ(key_number(pool, 1, 0, 2), 2);  // untouched: the pool's own number
}

TEST(KVCache, TruncateForgetsTrailingSlots) {
  KVCache cache = numbered_cache(1, 5, 8);
  cache.truncate(2);
  EXPECT_EQ(cache.length(), 2);
  EXPECT_EQ(cache.values(1).size(2), 2);
  EXPECT_THROW(cache.key_at(0, 0, 2), c10::Error);
  EXPECT_THROW(cache.truncate(3), c10::Error);
}

}  // namespace
}  // namespace specgate
