#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"

namespace specgate {

// The model inputs a batch layout implies, built on `device`.

// int64 [B, count]: content tokens of each row at slots [first_slot, first_slot + count).
at::Tensor tokens_at(const BatchState& state, int64_t first_slot, int64_t count, c10::Device device);
// int64 [B, count]: position ids of slots [first_slot, first_slot + count): slot - position_padding.
at::Tensor positions_at(const BatchState& state, int64_t first_slot, int64_t count, c10::Device device);
// bool [B, 1]: true where a row chooses its tokens greedily.
at::Tensor greedy_rows(const BatchState& state, c10::Device device);
// bool [B, num_slots]: true where a slot holds content (slot >= padding).
at::Tensor key_valid(const BatchState& state, int64_t num_slots, c10::Device device);

}  // namespace specgate
