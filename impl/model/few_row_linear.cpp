#include "impl/model/few_row_linear.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <omp.h>

#include "impl/model/horizontal_sum.h"
#include "impl/model/vector_isa.h"

namespace specgate {
namespace {

// The weight is fetched ahead of the product, into the L2 cache: the hardware prefetcher alone
// keeps too few lines in flight for one core to read at its bandwidth, and fetched into L1 they
// left the products of several rows waiting on loads (on a Zen 4 core, the real model's weights
// times 5 rows: 42.7 ms fetched into L1, 26.6 ms into L2, as long as a sum takes to read them).
// A kernel that reads one weight row at a time fetches this far ahead along it.
constexpr int64_t kPrefetchBytes = 4096;

// For several rows of x the AVX-512 kernel reads two weight rows side by side, so that each
// load of x serves both; the hardware prefetcher sees two short streams there, and the kernel
// fetches along the weight in memory order instead, this many pairs of rows ahead. For one row
// of x it reads the weight row after row: the real model's weights in 23 ms so, 28 ms in pairs.
constexpr int64_t kPrefetchPairs = 2;

// The fewest weights (floats) worth a thread of their own.
constexpr int64_t kMinWeightsPerThread = int64_t{1} << 16;

// y[r, j] = sum over k of x[r, k] * weight[j, k] for ROWS rows and the outputs j in [begin, end)
// of `out`: one pass over those rows of the weight, two at a time where ROWS > 1, each 16 of
// their floats multiplied into every row's accumulators while x stays in the L1 cache.
template <int ROWS>
__attribute__((target("avx512f,fma"))) void rows_avx512(const float* x, int64_t in, const float* weight, int64_t out,
                                                        int64_t begin, int64_t end, float* y) {
  const int64_t whole = in / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (in - whole)) - 1u);
  const char* const stop = reinterpret_cast<const char*>(weight + end * in);
  int64_t j = begin;
  for (; ROWS > 1 && j + 2 <= end; j += 2) {
    const float* w0 = weight + j * in;
    const float* w1 = w0 + in;
    // Two cache lines of the pair kPrefetchPairs ahead for each 16 floats of each row here.
    const char* ahead = reinterpret_cast<const char*>(w0 + kPrefetchPairs * 2 * in);
    __m512 sum0[ROWS], sum1[ROWS];
    for (int r = 0; r < ROWS; ++r) sum0[r] = sum1[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < whole; k += 16, ahead += 128) {
      if (ahead < stop) {
        _mm_prefetch(ahead, _MM_HINT_T1);
        _mm_prefetch(ahead + 64, _MM_HINT_T1);
      }
      const __m512 v0 = _mm512_loadu_ps(w0 + k), v1 = _mm512_loadu_ps(w1 + k);
      for (int r = 0; r < ROWS; ++r) {
        const __m512 xr = _mm512_loadu_ps(x + r * in + k);
        sum0[r] = _mm512_fmadd_ps(xr, v0, sum0[r]);
        sum1[r] = _mm512_fmadd_ps(xr, v1, sum1[r]);
      }
    }
    if (tail != 0) {
      const __m512 v0 = _mm512_maskz_loadu_ps(tail, w0 + whole), v1 = _mm512_maskz_loadu_ps(tail, w1 + whole);
      for (int r = 0; r < ROWS; ++r) {
        const __m512 xr = _mm512_maskz_loadu_ps(tail, x + r * in + whole);
        sum0[r] = _mm512_fmadd_ps(xr, v0, sum0[r]);
        sum1[r] = _mm512_fmadd_ps(xr, v1, sum1[r]);
      }
    }
    for (int r = 0; r < ROWS; ++r) {
      y[r * out + j] = horizontal_sum(sum0[r]);
      y[r * out + j + 1] = horizontal_sum(sum1[r]);
    }
  }
  for (; j < end; ++j) {
    const float* w = weight + j * in;
    __m512 sum[ROWS];
    for (int r = 0; r < ROWS; ++r) sum[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < whole; k += 16) {
      _mm_prefetch(reinterpret_cast<const char*>(w + k) + kPrefetchBytes, _MM_HINT_T1);
      const __m512 v = _mm512_loadu_ps(w + k);
      for (int r = 0; r < ROWS; ++r) sum[r] = _mm512_fmadd_ps(_mm512_loadu_ps(x + r * in + k), v, sum[r]);
    }
    if (tail != 0) {
      const __m512 v = _mm512_maskz_loadu_ps(tail, w + whole);
      for (int r = 0; r < ROWS; ++r) sum[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x + r * in + whole), v, sum[r]);
    }
    for (int r = 0; r < ROWS; ++r) y[r * out + j] = horizontal_sum(sum[r]);
  }
}

template <int ROWS>
__attribute__((target("avx2,fma"))) void rows_avx2(const float* x, int64_t in, const float* weight, int64_t out,
                                                  int64_t begin, int64_t end, float* y) {
  const int64_t whole = in / 8 * 8;
  for (int64_t j = begin; j < end; ++j) {
    const float* w = weight + j * in;
    __m256 sum[ROWS];
    for (int r = 0; r < ROWS; ++r) sum[r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < whole; k += 8) {
      _mm_prefetch(reinterpret_cast<const char*>(w + k) + kPrefetchBytes, _MM_HINT_T1);
      const __m256 v = _mm256_loadu_ps(w + k);
      for (int r = 0; r < ROWS; ++r) sum[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * in + k), v, sum[r]);
    }
    for (int r = 0; r < ROWS; ++r) {
      float total = horizontal_sum(sum[r]);
      for (int64_t k = whole; k < in; ++k) total += x[r * in + k] * w[k];
      y[r * out + j] = total;
    }
  }
}

using Kernel = void (*)(const float* x, int64_t in, const float* weight, int64_t out, int64_t begin, int64_t end,
                        float* y);
constexpr Kernel kAvx512Rows[kRowsAPass] = {rows_avx512<1>, rows_avx512<2>, rows_avx512<3>, rows_avx512<4>,
                                            rows_avx512<5>, rows_avx512<6>, rows_avx512<7>, rows_avx512<8>};
constexpr Kernel kAvx2Rows[kRowsAPass] = {rows_avx2<1>, rows_avx2<2>, rows_avx2<3>, rows_avx2<4>,
                                          rows_avx2<5>, rows_avx2<6>, rows_avx2<7>, rows_avx2<8>};

}  // namespace

at::Tensor few_row_linear(const at::Tensor& x, const at::Tensor& weight) {
  const int64_t in = weight.size(1), out = weight.size(0);
  const int64_t rows = x.numel() / std::max<int64_t>(in, 1);
  const bool few = x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat && x.device().is_cpu() &&
                   weight.device().is_cpu() && !x.requires_grad() && !weight.requires_grad() && rows >= 1 &&
                   rows <= kFewRows && x.size(-1) == in && weight.is_contiguous();
  const VectorIsa isa = few ? vector_isa() : VectorIsa::kNone;
  if (isa == VectorIsa::kNone) return at::linear(x, weight);
  RECORD_FUNCTION("specgate::few_row_linear", std::vector<c10::IValue>());  // for libtorch's profiler
  const at::Tensor rows_of_x = x.reshape({rows, in}).contiguous();
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = out;
  at::Tensor y = at::empty(shape, x.options());
  const Kernel* kernels = isa == VectorIsa::kAvx512 ? kAvx512Rows : kAvx2Rows;
  const float* weight_data = weight.data_ptr<float>();
  // libtorch's own OpenMP threads, which wait between its operators: a thread of any other pool
  // would share a core with one of them.
  const int threads = static_cast<int>(std::clamp<int64_t>(out * in / kMinWeightsPerThread, 1, at::get_num_threads()));
  for (int64_t first = 0; first < rows; first += kRowsAPass) {
    const int64_t count = std::min(kRowsAPass, rows - first);
    const Kernel kernel = kernels[count - 1];
    const float* x_data = rows_of_x.data_ptr<float>() + first * in;
    float* y_data = y.data_ptr<float>() + first * out;
    if (threads == 1) {
      kernel(x_data, in, weight_data, out, 0, out, y_data);
      continue;
    }
#pragma omp parallel num_threads(threads)
    {
      const int64_t shares = omp_get_num_threads(), thread = omp_get_thread_num();
      kernel(x_data, in, weight_data, out, out * thread / shares, out * (thread + 1) / shares, y_data);
    }
  }
  return y;
}

}  // namespace specgate
