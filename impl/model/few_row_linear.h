#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace specgate {

// The most rows of x that few_row_linear computes itself.
inline constexpr int64_t kFewRows = 8;

// at::linear(x, weight) without bias. For float32 on the CPU with 1 to kFewRows rows of x (a
// decode step at batch 1 to 8, a verification pass of K+1 positions at batch 1) each row of the
// weight is read once for every row of x: MKL's product reads the weights about twice over at 5
// rows, which made a verification pass cost two decode steps where it should cost one, and its
// single-row product runs on one thread. Among 2 to kFewRows rows, a row's result is the same
// whatever rows come with it. The weight's rows are shared among libtorch's threads
// (at::get_num_threads()), and each result is the same bits whatever their number. Other shapes,
// dtypes and devices, and CPUs on which libtorch runs neither its AVX2 nor its AVX-512 kernels
// (ATEN_CPU_CAPABILITY=default), go to at::linear.
at::Tensor few_row_linear(const at::Tensor& x, const at::Tensor& weight);

}  // namespace specgate
