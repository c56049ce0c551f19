#include "impl/model/rms_norm.h"

#include <cmath>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/record_function.h>

namespace specgate {
namespace {

// Partial sums of squares kept side by side: the compiler vectorises them without reordering
// a sum, and the order is this code's, not a vector width's.
constexpr int64_t kLanes = 8;

template <typename T>
void normalise_rows(const T* x, const T* weight, int64_t rows, int64_t n, T eps, T* y) {
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    T lanes[kLanes] = {};
    int64_t k = 0;
    for (; k + kLanes <= n; k += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += x[k + l] * x[k + l];
    }
    for (int64_t l = 0; k + l < n; ++l) lanes[l] += x[k + l] * x[k + l];
    const T squares = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    const T scale = T{1} / std::sqrt(squares / static_cast<T>(n) + eps);
    for (k = 0; k < n; ++k) y[k] = weight[k] * (x[k] * scale);
  }
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::ScalarType dtype = x.scalar_type();
  const int64_t n = x.size(-1);
  const bool fused = (dtype == at::kFloat || dtype == at::kDouble) && weight.scalar_type() == dtype &&
                     x.device().is_cpu() && weight.device().is_cpu() && !x.requires_grad() &&
                     !weight.requires_grad() && x.is_contiguous() && weight.is_contiguous() && n > 0 &&
                     weight.numel() == n;
  if (!fused) {
    const at::Tensor wide = at::isReducedFloatingType(dtype) ? x.to(at::kFloat) : x;
    const at::Tensor normed = wide * at::rsqrt(wide.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return weight * normed.to(dtype);
  }
  RECORD_FUNCTION("specgate::rms_norm", std::vector<c10::IValue>());  // for libtorch's profiler
  at::Tensor y = at::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES(dtype, "specgate::rms_norm", [&] {
    normalise_rows<scalar_t>(x.const_data_ptr<scalar_t>(), weight.const_data_ptr<scalar_t>(), x.numel() / n, n,
                             static_cast<scalar_t>(eps), y.mutable_data_ptr<scalar_t>());
  });
  return y;
}

}  // namespace specgate
