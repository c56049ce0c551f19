#include "impl/model/few_query_attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "impl/model/horizontal_sum.h"
#include "impl/model/vector_isa.h"

namespace specgate {
namespace {

constexpr float kHidden = -std::numeric_limits<float>::infinity();

// The fewest multiply-adds worth a thread of their own.
constexpr int64_t kMinWorkPerThread = int64_t{1} << 16;

// A key-value head's keys and values come from memory the first time its query rows read them:
// that pass fetches them into L1 this many keys ahead of its reading.
constexpr int64_t kFetchAheadKeys = 8;

// The most query rows whose weighted sums share each load of a value (two accumulators a row).
constexpr int64_t kRowsAValue = 8;

// One query row's scores: its query, and its mask and scores from its first shown key on, over
// its `keys` shown keys.
struct ScoreRow {
  const float* q;
  const float* mask;
  float* scores;
  int64_t keys;
};

// One query row's weighted sum: its weights over all keys, its last shown key and its output.
struct SumRow {
  const float* weights;
  int64_t last;
  float* out;
};

// Fetches `count` rows of `floats` floats, `stride` floats apart, into L1.
inline void fetch(const float* first, int64_t count, int64_t stride, int64_t floats) {
  for (int64_t i = 0; i < count; ++i) {
    const char* row = reinterpret_cast<const char*>(first + i * stride);
    for (int64_t byte = 0; byte < floats * 4; byte += 64) _mm_prefetch(row + byte, _MM_HINT_T0);
  }
}

// The four keys' scores from their partial sums: scale and the mask added.
__attribute__((target("avx2,fma"))) inline void store_four(__m256 a, __m256 b, __m256 c, __m256 d, float scale,
                                                           const float* mask, float* scores) {
  const __m256 pairs = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  const __m128 sums = _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps(pairs, 1));
  _mm_storeu_ps(scores, _mm_add_ps(_mm_mul_ps(sums, _mm_set1_ps(scale)), _mm_loadu_ps(mask)));
}

// q . key as eight partial sums.
__attribute__((target("avx512f,fma"))) inline __m256 dot_avx512(const float* q, const float* key, int64_t dim) {
  const int64_t whole = dim / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (dim - whole)) - 1u);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t d = 0; d < whole; d += 16) sum = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(key + d), sum);
  if (tail != 0) sum = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, q + whole), _mm512_maskz_loadu_ps(tail, key + whole), sum);
  // The halves through masked extracts: GCC 12's unmasked ones warn of an uninitialised register.
  const __m512d halves = _mm512_castps_pd(sum);
  return _mm256_add_ps(_mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, halves, 0)),
                       _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, halves, 1)));
}

// scores[s] = q . k_s * scale + mask[s] for rows whose shown keys start at k; four keys at a
// time, their four sums reduced together, each four read once for every row (they stay in L1).
// A row scores a key the same way whatever rows come with it: among four, or alone past its
// last whole four.
__attribute__((target("avx512f,fma"))) void scores_avx512(std::span<const ScoreRow> rows, const float* k,
                                                          int64_t key_stride, int64_t dim, float scale,
                                                          bool fetch_ahead) {
  int64_t longest = 0;
  for (const ScoreRow& row : rows) longest = std::max(longest, row.keys);
  for (int64_t s = 0; s < longest; s += 4) {
    const float* key = k + s * key_stride;
    if (fetch_ahead) fetch(key + kFetchAheadKeys * key_stride, 4, key_stride, dim);
    for (const ScoreRow& row : rows) {
      if (s + 4 <= row.keys) {
        store_four(dot_avx512(row.q, key, dim), dot_avx512(row.q, key + key_stride, dim),
                   dot_avx512(row.q, key + 2 * key_stride, dim), dot_avx512(row.q, key + 3 * key_stride, dim), scale,
                   row.mask + s, row.scores + s);
        continue;
      }
      for (int64_t t = s; t < row.keys; ++t) {
        row.scores[t] = horizontal_sum(dot_avx512(row.q, k + t * key_stride, dim)) * scale + row.mask[t];
      }
    }
  }
}

// out = sum over s in [first, last] of weights[s] * v_s for ROWS rows sharing `first`, sixteen
// floats of v at a time, each load of v serving every row: a row's even and odd keys summed apart
// in the order of the keys, then together, whatever rows come with it.
template <int ROWS>
__attribute__((target("avx512f,fma"))) void weighted_sums_avx512(const SumRow* rows, const float* v,
                                                                 int64_t value_stride, int64_t first, int64_t dim,
                                                                 bool fetch_ahead) {
  int64_t shortest = rows[0].last, longest = rows[0].last;
  for (int r = 1; r < ROWS; ++r) {
    shortest = std::min(shortest, rows[r].last);
    longest = std::max(longest, rows[r].last);
  }
  for (int64_t d = 0; d < dim; d += 16) {
    const __mmask16 lanes = static_cast<__mmask16>(dim - d >= 16 ? 0xffffu : (1u << (dim - d)) - 1u);
    __m512 even[ROWS], odd[ROWS];
    for (int r = 0; r < ROWS; ++r) even[r] = odd[r] = _mm512_setzero_ps();
    int64_t s = first;
    for (; s + 1 <= shortest; s += 2) {
      if (fetch_ahead && d == 0) fetch(v + (s + kFetchAheadKeys) * value_stride, 2, value_stride, dim);
      const __m512 v0 = _mm512_maskz_loadu_ps(lanes, v + s * value_stride + d);
      const __m512 v1 = _mm512_maskz_loadu_ps(lanes, v + (s + 1) * value_stride + d);
      for (int r = 0; r < ROWS; ++r) {
        even[r] = _mm512_fmadd_ps(_mm512_set1_ps(rows[r].weights[s]), v0, even[r]);
        odd[r] = _mm512_fmadd_ps(_mm512_set1_ps(rows[r].weights[s + 1]), v1, odd[r]);
      }
    }
    for (; s <= longest; s += 2) {  // past the shortest row's last key
      const __m512 v0 = _mm512_maskz_loadu_ps(lanes, v + s * value_stride + d);
      const __m512 v1 = s + 1 <= longest ? _mm512_maskz_loadu_ps(lanes, v + (s + 1) * value_stride + d) : v0;
      for (int r = 0; r < ROWS; ++r) {
        if (s > rows[r].last) continue;
        even[r] = _mm512_fmadd_ps(_mm512_set1_ps(rows[r].weights[s]), v0, even[r]);
        if (s + 1 <= rows[r].last) odd[r] = _mm512_fmadd_ps(_mm512_set1_ps(rows[r].weights[s + 1]), v1, odd[r]);
      }
    }
    for (int r = 0; r < ROWS; ++r) _mm512_mask_storeu_ps(rows[r].out + d, lanes, _mm512_add_ps(even[r], odd[r]));
  }
}

using WeightedSums = void (*)(const SumRow* rows, const float* v, int64_t value_stride, int64_t first, int64_t dim,
                              bool fetch_ahead);
constexpr WeightedSums kAvx512Sums[kRowsAValue] = {
    weighted_sums_avx512<1>, weighted_sums_avx512<2>, weighted_sums_avx512<3>, weighted_sums_avx512<4>,
    weighted_sums_avx512<5>, weighted_sums_avx512<6>, weighted_sums_avx512<7>, weighted_sums_avx512<8>};

// weighted_sums_avx512 for any number of rows, kRowsAValue at a time.
void weighted_sums_avx512_rows(std::span<const SumRow> rows, const float* v, int64_t value_stride, int64_t first,
                               int64_t dim, bool fetch_ahead) {
  for (size_t done = 0; done < rows.size(); done += kRowsAValue) {
    const int64_t count = std::min<int64_t>(kRowsAValue, static_cast<int64_t>(rows.size() - done));
    kAvx512Sums[count - 1](rows.data() + done, v, value_stride, first, dim, fetch_ahead && done == 0);
  }
}

// q . key over the whole eights of floats, as eight partial sums.
__attribute__((target("avx2,fma"))) inline __m256 dot_avx2(const float* q, const float* key, int64_t dim) {
  __m256 sum = _mm256_setzero_ps();
  for (int64_t d = 0; d + 8 <= dim; d += 8) sum = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(key + d), sum);
  return sum;
}

// q . key over the floats past the last whole eight.
inline float rest_of_dot(const float* q, const float* key, int64_t dim) {
  float sum = 0.0f;
  for (int64_t d = dim / 8 * 8; d < dim; ++d) sum += q[d] * key[d];
  return sum;
}

// scores_avx512 with eight floats at a time; a head size that is no multiple of eight scores
// every key alone.
__attribute__((target("avx2,fma"))) void scores_avx2(std::span<const ScoreRow> rows, const float* k,
                                                     int64_t key_stride, int64_t dim, float scale, bool fetch_ahead) {
  int64_t longest = 0;
  for (const ScoreRow& row : rows) longest = std::max(longest, row.keys);
  for (int64_t s = 0; s < longest; s += 4) {
    const float* key = k + s * key_stride;
    if (fetch_ahead) fetch(key + kFetchAheadKeys * key_stride, 4, key_stride, dim);
    for (const ScoreRow& row : rows) {
      if (dim % 8 == 0 && s + 4 <= row.keys) {
        store_four(dot_avx2(row.q, key, dim), dot_avx2(row.q, key + key_stride, dim),
                   dot_avx2(row.q, key + 2 * key_stride, dim), dot_avx2(row.q, key + 3 * key_stride, dim), scale,
                   row.mask + s, row.scores + s);
        continue;
      }
      for (int64_t t = s; t < std::min(s + 4, row.keys); ++t) {
        const float* other = k + t * key_stride;
        row.scores[t] =
            (horizontal_sum(dot_avx2(row.q, other, dim)) + rest_of_dot(row.q, other, dim)) * scale + row.mask[t];
      }
    }
  }
}

// weighted_sum_avx512 with eight floats at a time.
__attribute__((target("avx2,fma"))) void weighted_sum_avx2(const float* weights, const float* v, int64_t value_stride,
                                                          int64_t first, int64_t last, int64_t dim, bool reads_first,
                                                          float* out) {
  const int64_t whole = dim / 8 * 8;
  for (int64_t d = 0; d < whole; d += 8) {
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    int64_t s = first;
    for (; s + 1 <= last; s += 2) {
      if (reads_first && d == 0) fetch(v + (s + kFetchAheadKeys) * value_stride, 2, value_stride, dim);
      even = _mm256_fmadd_ps(_mm256_set1_ps(weights[s]), _mm256_loadu_ps(v + s * value_stride + d), even);
      odd = _mm256_fmadd_ps(_mm256_set1_ps(weights[s + 1]), _mm256_loadu_ps(v + (s + 1) * value_stride + d), odd);
    }
    if (s == last) even = _mm256_fmadd_ps(_mm256_set1_ps(weights[s]), _mm256_loadu_ps(v + s * value_stride + d), even);
    _mm256_storeu_ps(out + d, _mm256_add_ps(even, odd));
  }
  for (int64_t d = whole; d < dim; ++d) {
    float sum = 0.0f;
    for (int64_t s = first; s <= last; ++s) sum += weights[s] * v[s * value_stride + d];
    out[d] = sum;
  }
}

// weighted_sum_avx2 row after row.
void weighted_sums_avx2_rows(std::span<const SumRow> rows, const float* v, int64_t value_stride, int64_t first,
                             int64_t dim, bool fetch_ahead) {
  for (const SumRow& row : rows) {
    weighted_sum_avx2(row.weights, v, value_stride, first, row.last, dim, fetch_ahead && &row == rows.data(), row.out);
  }
}

struct Kernels {
  void (*scores)(std::span<const ScoreRow> rows, const float* k, int64_t key_stride, int64_t dim, float scale,
                 bool fetch_ahead);
  void (*weighted_sums)(std::span<const SumRow> rows, const float* v, int64_t value_stride, int64_t first,
                        int64_t dim, bool fetch_ahead);
};

// The first and last keys a row's mask shows.
std::pair<int64_t, int64_t> shown_keys(const float* mask, int64_t keys) {
  int64_t first = 0, last = keys - 1;
  while (first < last && mask[first] == kHidden) ++first;
  while (last > first && mask[last] == kHidden) --last;
  return {first, last};
}

}  // namespace

bool few_query_attention_applies(const at::Tensor& q, int64_t group) {
  return q.scalar_type() == at::kFloat && q.device().is_cpu() && !q.requires_grad() && q.dim() == 4 &&
         group * q.size(2) <= kFewQueries && vector_isa() != VectorIsa::kNone;
}

at::Tensor few_query_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  const int64_t batch = q.size(0), heads = q.size(1), steps = q.size(2), dim = q.size(3);
  const int64_t kv_heads = k.size(1), keys = k.size(2);
  TORCH_CHECK(kv_heads > 0 && heads % kv_heads == 0, "few_query_attention: query heads not a multiple of key-value heads");
  const int64_t group = heads / kv_heads;
  TORCH_CHECK(few_query_attention_applies(q, group) && k.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat &&
                  v.sizes() == k.sizes() && mask.scalar_type() == at::kFloat && k.size(0) == batch &&
                  k.size(3) == dim && mask.dim() == 5 && mask.size(0) == batch && mask.size(3) == steps &&
                  mask.size(4) == keys,
              "few_query_attention: unexpected shapes or dtypes");
  TORCH_CHECK(q.stride(3) == 1 && k.stride(3) == 1 && v.stride(3) == 1 && mask.stride(4) == 1,
              "few_query_attention: last dimensions must be contiguous");
  RECORD_FUNCTION("specgate::few_query_attention", std::vector<c10::IValue>());  // for libtorch's profiler
  const Kernels kernels = vector_isa() == VectorIsa::kAvx512 ? Kernels{scores_avx512, weighted_sums_avx512_rows}
                                                              : Kernels{scores_avx2, weighted_sums_avx2_rows};
  // As libtorch's attention scales: 1 / sqrt(D) in double, then in float.
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim)));
  const float *q_data = q.const_data_ptr<float>(), *k_data = k.const_data_ptr<float>(),
              *v_data = v.const_data_ptr<float>(), *mask_data = mask.const_data_ptr<float>();
  const auto mask_row = [&](int64_t b, int64_t t) { return mask_data + b * mask.stride(0) + t * mask.stride(3); };
  // Each query position's first and last shown key, which all of its heads share.
  std::vector<std::pair<int64_t, int64_t>> shown(batch * steps);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < steps; ++t) shown[b * steps + t] = shown_keys(mask_row(b, t), keys);
  }
  const int64_t grain = std::max<int64_t>(1, kMinWorkPerThread / std::max<int64_t>(group * steps * keys * dim, 1));

  // Calls rows(b, h, first, positions, fetch_ahead) for each key-value head and each set of the
  // positions whose shown keys start at the same key, `first`: their query rows read the head's
  // keys and values together. The first call of a head fetches them ahead, from memory. The
  // key-value heads are shared among threads.
  const auto for_each_head = [&](const auto& rows) {
    at::parallel_for(0, batch * kv_heads, grain, [&](int64_t begin, int64_t end) {
      for (int64_t unit = begin; unit < end; ++unit) {
        const int64_t b = unit / kv_heads, h = unit % kv_heads;
        bool placed[kFewQueries] = {};
        for (int64_t t = 0; t < steps; ++t) {
          if (placed[t]) continue;
          const int64_t first = shown[b * steps + t].first;
          int64_t positions[kFewQueries], count = 0;
          for (int64_t u = t; u < steps; ++u) {
            if (placed[u] || shown[b * steps + u].first != first) continue;
            placed[u] = true;
            positions[count++] = u;
          }
          rows(b, h, first, std::span<const int64_t>(positions, count), t == 0);
        }
      }
    });
  };

  // Scores [B, H, T, S], then their softmax (libtorch's, vectorised), then the weighted sums.
  at::Tensor scores = at::empty({batch, heads, steps, keys}, q.options());
  float* scores_data = scores.data_ptr<float>();
  for_each_head([&](int64_t b, int64_t h, int64_t first, std::span<const int64_t> positions, bool fetch_ahead) {
    ScoreRow rows[kFewQueries];
    int64_t count = 0;
    for (int64_t head = h * group; head < (h + 1) * group; ++head) {
      for (const int64_t t : positions) {
        float* row_scores = scores_data + ((b * heads + head) * steps + t) * keys;
        std::fill(row_scores, row_scores + keys, kHidden);
        rows[count++] = {q_data + b * q.stride(0) + head * q.stride(1) + t * q.stride(2), mask_row(b, t) + first,
                         row_scores + first, shown[b * steps + t].second + 1 - first};
      }
    }
    kernels.scores(std::span<const ScoreRow>(rows, count), k_data + b * k.stride(0) + h * k.stride(1) + first * k.stride(2),
                   k.stride(2), dim, scale, fetch_ahead);
  });
  const at::Tensor weights = scores.softmax(-1);
  const float* weights_data = weights.const_data_ptr<float>();
  at::Tensor out = at::empty({batch, steps, heads * dim}, q.options());
  float* out_data = out.data_ptr<float>();
  for_each_head([&](int64_t b, int64_t h, int64_t first, std::span<const int64_t> positions, bool fetch_ahead) {
    SumRow rows[kFewQueries];
    int64_t count = 0;
    for (int64_t head = h * group; head < (h + 1) * group; ++head) {
      for (const int64_t t : positions) {
        rows[count++] = {weights_data + ((b * heads + head) * steps + t) * keys, shown[b * steps + t].second,
                         out_data + ((b * steps + t) * heads + head) * dim};
      }
    }
    kernels.weighted_sums(std::span<const SumRow>(rows, count), v_data + b * v.stride(0) + h * v.stride(1), v.stride(2),
                          first, dim, fetch_ahead);
  });
  return out;
}

}  // namespace specgate
