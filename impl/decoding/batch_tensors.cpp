#include "impl/decoding/batch_tensors.h"

#include <ATen/ATen.h>

#include "impl/common/host_transfer.h"

namespace specgate {
namespace {

at::Tensor to_device(std::vector<int64_t> values, int64_t rows, int64_t columns, c10::Device device) {
  return upload(at::tensor(values, at::TensorOptions().dtype(at::kLong)).view({rows, columns}), device);
}

}  // namespace

at::Tensor tokens_at(const BatchState& state, int64_t first_slot, int64_t count, c10::Device device) {
  std::vector<int64_t> values;
  values.reserve(state.batch_size() * count);
  for (size_t i = 0; i < state.rows.size(); ++i) {
    const int64_t padding = state.padding(i);
    for (int64_t slot = first_slot; slot < first_slot + count; ++slot)
      values.push_back(slot >= padding ? state.rows[i].tokens[slot - padding] : 0);
  }
  return to_device(std::move(values), state.batch_size(), count, device);
}

at::Tensor positions_at(const BatchState& state, int64_t first_slot, int64_t count, c10::Device device) {
  std::vector<int64_t> values;
  values.reserve(state.batch_size() * count);
  for (const Row& row : state.rows) {
    for (int64_t slot = first_slot; slot < first_slot + count; ++slot)
      values.push_back(std::max<int64_t>(slot - row.position_padding, 0));
  }
  return to_device(std::move(values), state.batch_size(), count, device);
}

at::Tensor greedy_rows(const BatchState& state, c10::Device device) {
  std::vector<int64_t> greedy;
  for (const Row& row : state.rows) greedy.push_back(row.sampling.greedy() ? 1 : 0);
  return to_device(std::move(greedy), state.batch_size(), 1, device).to(at::kBool);
}

at::Tensor key_valid(const BatchState& state, int64_t num_slots, c10::Device device) {
  std::vector<int64_t> padding;
  for (size_t i = 0; i < state.rows.size(); ++i) padding.push_back(state.padding(i));
  const at::Tensor first_content = to_device(std::move(padding), state.batch_size(), 1, device);
  return at::arange(num_slots, at::TensorOptions().dtype(at::kLong).device(device)).unsqueeze(0).ge(first_content);
}

}  // namespace specgate
