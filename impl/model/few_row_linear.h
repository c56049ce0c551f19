#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace specgate {

// The rows of x that one pass over the weight multiplies.
inline constexpr int64_t kRowsAPass = 8;
// The most rows of x that few_row_linear computes itself. A pass of the real model on one
// thread (decode_anatomy) with MKL's products and with these: 16 rows 113-120 against 68-81 ms,
// 64 rows 306-329 against 258-261 ms, 128 rows 485-500 ms either way.
inline constexpr int64_t kFewRows = 64;

// at::linear(x, weight) without bias. For float32 on the CPU with 1 to kFewRows rows of x (a
// decode step, a verification pass of K+1 positions at a batch of up to 12) the weight is read
// once for every kRowsAPass rows of x: MKL's product reads the weights about twice over at 5
// rows, which made a verification pass cost two decode steps where it should cost one, and its
// single-row product runs on one thread. A row's result is the same bits whatever rows come
// with it, and whatever the number of libtorch's threads (at::get_num_threads()), among which
// the weight's rows are shared. Other shapes, dtypes and devices, and CPUs on which libtorch
// runs neither its AVX2 nor its AVX-512 kernels (ATEN_CPU_CAPABILITY=default), go to at::linear.
at::Tensor few_row_linear(const at::Tensor& x, const at::Tensor& weight);

}  // namespace specgate
