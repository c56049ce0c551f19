#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <gtest/gtest.h>

#include "impl/model/few_query_attention.h"

namespace specgate {
namespace {

// Where libtorch runs neither its AVX2 nor its AVX-512 kernels, attention is libtorch's.
bool attention_kernel_in_use() { return at::get_cpu_capability() != "DEFAULT"; }

struct AttentionShape {
  int64_t batch, heads, kv_heads, steps, keys, dim;
};
// Head sizes with and without a tail past the vector width (16 and 8 floats), key counts with and
// without one past the four keys scored together, groups of 1 to 4 heads, and the real model's.
constexpr AttentionShape kAttentionShapes[] = {{1, 9, 3, 1, 200, 64}, {2, 9, 3, 5, 203, 64}, {3, 4, 1, 4, 9, 37},
                                               {1, 2, 2, 8, 8, 8},    {2, 8, 2, 2, 31, 128}, {1, 3, 3, 1, 6, 20},
                                               {1, 2, 2, 1, 1, 16}};

constexpr double kHiddenKey = -std::numeric_limits<double>::infinity();

// An additive mask [B, 1, 1, T, S] that hides each key with probability `hidden`, a row's left
// padding (its first `padding[b]` keys), and never a query's own slot (the last T keys, in order).
at::Tensor random_mask(const AttentionShape& s, double hidden, const std::vector<int64_t>& padding) {
  at::Tensor mask = at::zeros({s.batch, 1, 1, s.steps, s.keys}, at::kDouble);
  mask.masked_fill_(at::rand({s.batch, 1, 1, s.steps, s.keys}, at::kDouble).lt(hidden), kHiddenKey);
  for (int64_t b = 0; b < s.batch; ++b) mask[b].narrow(-1, 0, padding[b]).fill_(kHiddenKey);
  for (int64_t t = 0; t < s.steps; ++t) mask.select(3, t).select(-1, s.keys - s.steps + t).fill_(0.0);
  return mask;
}

// softmax(q k^T / sqrt(D) + mask) v in float64, from libtorch's own products: [B, T, H * D].
at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  const int64_t group = q.size(1) / k.size(1);
  const at::Tensor keys = k.to(at::kDouble).repeat_interleave(group, 1), values = v.to(at::kDouble).repeat_interleave(group, 1);
  const at::Tensor scores = at::matmul(q.to(at::kDouble), keys.transpose(2, 3)) / std::sqrt(static_cast<double>(q.size(3)));
  const at::Tensor out = at::matmul((scores + mask.squeeze(1)).softmax(-1), values);  // [B, H, T, D]
  return out.transpose(1, 2).reshape({q.size(0), q.size(2), -1});
}

struct AttentionProblem {
  at::Tensor q, k, v, mask;
};

AttentionProblem random_problem(const AttentionShape& s, double hidden) {
  std::vector<int64_t> padding;
  for (int64_t b = 0; b < s.batch; ++b) padding.push_back(b * (s.keys - s.steps) / std::max<int64_t>(s.batch, 2));
  return {at::randn({s.batch, s.heads, s.steps, s.dim}), at::randn({s.batch, s.kv_heads, s.keys, s.dim}),
          at::randn({s.batch, s.kv_heads, s.keys, s.dim}), random_mask(s, hidden, padding)};
}

TEST(FewQueryAttention, EqualsAttentionInFloat64WithinFloat32Rounding) {
  if (!attention_kernel_in_use()) GTEST_SKIP() << "ATEN_CPU_CAPABILITY=default: libtorch's attention runs instead";
  at::manual_seed(0);
  for (const AttentionShape& s : kAttentionShapes) {
    for (const double hidden : {0.0, 0.5}) {
      const AttentionProblem p = random_problem(s, hidden);
      ASSERT_TRUE(few_query_attention_applies(p.q, s.heads / s.kv_heads));
      const at::Tensor ours = few_query_attention(p.q, p.k, p.v, p.mask.to(at::kFloat));
      ASSERT_EQ(ours.sizes(), (std::vector<int64_t>{s.batch, s.steps, s.heads * s.dim}));
      const double error = (ours.to(at::kDouble) - reference(p.q, p.k, p.v, p.mask)).abs().max().item<double>();
      EXPECT_LT(error, 1e-5) << "heads " << s.heads << "/" << s.kv_heads << ", T " << s.steps << ", S " << s.keys
                             << ", D " << s.dim << ", hidden " << hidden;
    }
  }
}

// The cache's keys and values as the transformer passes them: views into a buffer longer than the
// keys read, with the rows, heads and slots of the cache's layout.
TEST(FewQueryAttention, ReadsKeysAndQueriesThroughTheirStrides) {
  if (!attention_kernel_in_use()) GTEST_SKIP() << "ATEN_CPU_CAPABILITY=default: libtorch's attention runs instead";
  at::manual_seed(1);
  const AttentionShape s{2, 9, 3, 5, 40, 64};
  const AttentionProblem p = random_problem(s, 0.3);
  const at::Tensor cache = at::randn({2, 4, s.kv_heads, 64, s.dim});  // [K/V, rows, heads, slots, D]
  const at::Tensor k = cache[0].narrow(0, 1, 2).narrow(2, 0, s.keys), v = cache[1].narrow(0, 1, 2).narrow(2, 0, s.keys);
  k.copy_(p.k);
  v.copy_(p.v);
  const at::Tensor q = p.q.transpose(1, 2).contiguous().transpose(1, 2);  // [B, H, T, D] over [B, T, H, D]
  EXPECT_TRUE(at::equal(few_query_attention(q, k, v, p.mask.to(at::kFloat)),
                        few_query_attention(p.q, p.k, p.v, p.mask.to(at::kFloat))));
}

// A key the mask hides has no influence: whatever (finite) key and value it holds, not a bit moves.
TEST(FewQueryAttention, HiddenKeysChangeNoBit) {
  if (!attention_kernel_in_use()) GTEST_SKIP() << "ATEN_CPU_CAPABILITY=default: libtorch's attention runs instead";
  at::manual_seed(2);
  for (const AttentionShape& s : kAttentionShapes) {
    const AttentionProblem p = random_problem(s, 0.5);
    const at::Tensor mask = p.mask.to(at::kFloat);
    // Keys hidden from every query of their row.
    const at::Tensor hidden = mask.squeeze(1).squeeze(1).isinf().all(1);  // [B, S]
    const at::Tensor where = hidden.unsqueeze(1).unsqueeze(-1).expand_as(p.k);
    const at::Tensor other_k = at::where(where, at::randn_like(p.k) * 100, p.k);
    const at::Tensor other_v = at::where(where, at::randn_like(p.v) * 100, p.v);
    EXPECT_TRUE(at::equal(few_query_attention(p.q, other_k, other_v, mask), few_query_attention(p.q, p.k, p.v, mask)))
        << "T " << s.steps << ", S " << s.keys << ", D " << s.dim;
  }
}

// A row's result is the same bits in any batch and on any number of threads, so that neither the
// batch a row is decoded in nor the machine's cores can move its tokens.
TEST(FewQueryAttention, ARowsResultIsTheSameWhateverTheBatchAndThreads) {
  if (!attention_kernel_in_use()) GTEST_SKIP() << "ATEN_CPU_CAPABILITY=default: libtorch's attention runs instead";
  at::manual_seed(3);
  const AttentionShape s{4, 9, 3, 5, 300, 64};
  const AttentionProblem p = random_problem(s, 0.2);
  const at::Tensor mask = p.mask.to(at::kFloat);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const at::Tensor alone = few_query_attention(p.q, p.k, p.v, mask);
  at::set_num_threads(std::max(threads, 2));
  const at::Tensor shared = few_query_attention(p.q, p.k, p.v, mask);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(alone, shared));
  for (int64_t b = 0; b < s.batch; ++b) {
    const auto row = [&](const at::Tensor& t) { return t.narrow(0, b, 1); };
    EXPECT_TRUE(at::equal(few_query_attention(row(p.q), row(p.k), row(p.v), row(mask)), row(alone))) << "row " << b;
  }
}

// A query position's result is the same bits whatever positions share its pass: a verification
// pass of K+1 positions gives each what a pass of it alone gives, though their rows read the
// keys and values together. Causal masks, so that the positions' last shown keys differ, and
// keys hidden at random, so that their first shown keys differ too (head sizes with and without
// a tail past the vector width; key counts with and without one past the four scored together).
TEST(FewQueryAttention, APositionsResultIsTheSameWhateverPositionsComeWithIt) {
  if (!attention_kernel_in_use()) GTEST_SKIP() << "ATEN_CPU_CAPABILITY=default: libtorch's attention runs instead";
  at::manual_seed(4);
  for (const AttentionShape& s : {AttentionShape{2, 9, 3, 5, 203, 64}, AttentionShape{1, 4, 1, 4, 17, 37},
                                  AttentionShape{2, 2, 2, 8, 40, 16}}) {
    const AttentionProblem p = random_problem(s, 0.3);
    for (int64_t t = 0; t + 1 < s.steps; ++t) {
      p.mask.select(3, t).narrow(-1, s.keys - s.steps + t + 1, s.steps - t - 1).fill_(kHiddenKey);
    }
    const at::Tensor mask = p.mask.to(at::kFloat);
    const at::Tensor together = few_query_attention(p.q, p.k, p.v, mask);
    for (int64_t t = 0; t < s.steps; ++t) {
      const at::Tensor alone = few_query_attention(p.q.narrow(2, t, 1), p.k, p.v, mask.narrow(3, t, 1));
      EXPECT_TRUE(at::equal(alone, together.narrow(1, t, 1))) << "T " << s.steps << ", D " << s.dim << ", position " << t;
    }
  }
}

TEST(FewQueryAttention, AppliesToFewFloat32QueriesOnTheCpu) {
  const at::Tensor q = at::zeros({1, 9, 5, 64});
  EXPECT_EQ(few_query_attention_applies(q, 3), attention_kernel_in_use());
  EXPECT_FALSE(few_query_attention_applies(at::zeros({1, 9, kFewQueries / 3 + 1, 64}), 3));
  EXPECT_FALSE(few_query_attention_applies(q.to(at::kDouble), 3));
  EXPECT_FALSE(few_query_attention_applies(q.to(at::kBFloat16), 3));
}

}  // namespace
}  // namespace specgate
