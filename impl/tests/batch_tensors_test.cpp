// The model inputs a hand-built left-padded layout implies: tokens, position ids and key mask.
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "impl/decoding/batch_tensors.h"

namespace specgate {
namespace {

const c10::Device kCpu(c10::kCPU);

at::Tensor rows_of(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  return at::tensor(flat, at::TensorOptions().dtype(at::kLong)).view({static_cast<int64_t>(rows.size()), -1});
}

// Row 0 holds 5 6 7 unpadded, row 1 holds 8 behind two slots of padding.
BatchState two_rows() {
  DecodeOptions options;
  BatchState state;
  state.rows.emplace_back(SequenceRequest{.sequence_index = 0, .prompt = {5, 6, 7}}, options);
  state.rows.emplace_back(SequenceRequest{.sequence_index = 1, .prompt = {8}}, options);
  state.width = 3;
  for (size_t i = 0; i < state.rows.size(); ++i) state.rows[i].position_padding = state.padding(i);
  return state;
}

TEST(BatchTensors, TokensSitRightAlignedBehindZeroPadding) {
  const BatchState state = two_rows();
  EXPECT_TRUE(tokens_at(state, 0, 3, kCpu).equal(rows_of({{5, 6, 7}, {0, 0, 8}})));
  EXPECT_TRUE(tokens_at(state, 2, 1, kCpu).equal(rows_of({{7}, {8}}))) << "the pending tokens";
}

TEST(BatchTensors, PositionsCountFromEachRowsFirstContentSlot) {
  BatchState state = two_rows();
  EXPECT_TRUE(positions_at(state, 0, 4, kCpu).equal(rows_of({{0, 1, 2, 3}, {0, 0, 0, 1}})));
  state.rows[1].position_padding = 1;  // stale: one slot short of the real padding
  EXPECT_TRUE(positions_at(state, 2, 2, kCpu).equal(rows_of({{2, 3}, {1, 2}})));
}

TEST(BatchTensors, KeysAreValidFromEachRowsFirstContentSlotOn) {
  const BatchState state = two_rows();
  const at::Tensor expected = rows_of({{1, 1, 1, 1, 1}, {0, 0, 1, 1, 1}}).to(at::kBool);
  EXPECT_TRUE(key_valid(state, 5, kCpu).equal(expected)) << "slots past the width (drafts) are valid";
}

}  // namespace
}  // namespace specgate
