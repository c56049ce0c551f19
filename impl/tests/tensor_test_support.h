#pragma once

// Tensor options and readers the impl tests share.

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

namespace specgate::test_support {

inline const auto kDouble = at::TensorOptions().dtype(at::kDouble);
inline const auto kLong = at::TensorOptions().dtype(at::kLong);

// Row `row` of a 2-D int64 tensor.
inline std::vector<int64_t> row_of(const at::Tensor& tokens, int64_t row) {
  const at::Tensor r = tokens[row].contiguous();
  return {r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel()};
}

}  // namespace specgate::test_support
