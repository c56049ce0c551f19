#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace specgate {

// The most query rows a key-value head serves (its query heads times the new positions) that
// few_query_attention computes itself: a decode step, and a verification pass of 5 positions with
// 3 query heads a key-value head. For more, libtorch's product repays its set-up: on the real
// model's shape at 200 keys, 12 against 28 us at 1 position, 53 against 54 at 5, 136 against
// 111 at 13 (attention_benchmark).
inline constexpr int64_t kFewQueries = 16;

// Whether few_query_attention computes attention for queries q [B, H, T, D] with `group` query
// heads to each key-value head: float32 on the CPU, at most kFewQueries query rows a key-value
// head, on a CPU where libtorch runs its AVX2 or AVX-512 kernels.
bool few_query_attention_applies(const at::Tensor& q, int64_t group);

// softmax(q k^T / sqrt(D) + mask) v, query head h reading key-value head h / group: a dot
// product a key, the softmax, the values' weighted sum, the query rows of a key-value head
// reading each of its keys and values together while it is in L1. For a few queries
// libtorch's attention costs more than its arithmetic: it multiplies them with MKL's general
// product, whose set-up outweighs a 3 x 64 by 64 x 200 product (1.6 ms of a 26 ms decode step
// of the real model). q [B, H, T, D]; k, v [B, H / group, S, D], finite, the keys the mask hides
// too (their weight is zero, and zero times infinity is not); mask additive [B, 1, 1, T, S], 0 or
// -inf, each query seeing at least one key; every tensor's last dimension contiguous. Keys hidden
// before a query's first shown key and after its last cost nothing. Returns [B, T, H * D]. Each
// row's result is the same bits whatever the batch, the other rows and the number of threads.
at::Tensor few_query_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask);

}  // namespace specgate
