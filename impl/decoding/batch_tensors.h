#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"
#include "impl/model/kv_cache.h"

namespace specgate {

// The model inputs a batch layout implies, built on `device`.

// int64 [B, count]: content tokens of each row at slots [first_slot, first_slot + count).
at::Tensor tokens_at(const BatchState& state, int64_t first_slot, int64_t count, c10::Device device);
// int64 [B, count]: position ids of slots [first_slot, first_slot + count): slot - position_padding.
at::Tensor positions_at(const BatchState& state, int64_t first_slot, int64_t count, c10::Device device);
// bool [B, num_slots]: true where a slot holds content (slot >= padding). `hidden_slot`, when
// not negative, is masked for every row.
at::Tensor key_valid(const BatchState& state, int64_t num_slots, c10::Device device, bool let_padding_through = false,
                     int64_t hidden_slot = -1);

// What one cache keeps of a row when the batch is re-laid out: `kept` content tokens, read
// from old slots old_padding + offset + j, written to new slots new_padding + j.
struct RowMove {
  int64_t old_padding;
  int64_t new_padding;
  int64_t kept;
  int64_t offset = 0;
};
// The moves as runs for KVCache::shift_rows.
std::vector<SlotRun> slot_runs(const std::vector<RowMove>& moves);

}  // namespace specgate
