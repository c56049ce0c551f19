#include <cstdint>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "impl/common/huge_page_arena.h"

namespace specgate {
namespace {

TEST(HugePageArena, CarvesAlignedTensorsThatOutliveTheArena) {
  at::Tensor first, second;
  {
    HugePageArena arena(HugePageArena::footprint(3 * 5 * 4) + HugePageArena::footprint(7 * 8));
    first = arena.allocate({3, 5}, at::kFloat);
    second = arena.allocate({7}, at::kDouble);
  }
  EXPECT_EQ(first.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(second.scalar_type(), at::kDouble);
  EXPECT_TRUE(first.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first.data_ptr()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second.data_ptr()) % 64, 0u);
  EXPECT_NE(first.data_ptr(), second.data_ptr());
  first.fill_(1.5);  // the mapping is still there
  second.copy_(at::arange(7, at::kDouble));
  EXPECT_EQ(first.sum().item<float>(), 22.5f);
  EXPECT_EQ(second.sum().item<double>(), 21.0);
}

TEST(HugePageArena, RefusesMoreThanItHolds) {
  HugePageArena arena(HugePageArena::footprint(16 * 4));
  arena.allocate({16}, at::kFloat);
  EXPECT_THROW(arena.allocate({1}, at::kFloat), c10::Error);
}

}  // namespace
}  // namespace specgate
