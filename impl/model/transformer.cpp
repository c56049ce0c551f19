#include "impl/model/transformer.h"

#include <limits>
#include <numeric>
#include <span>

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include "impl/model/few_query_attention.h"
#include "impl/model/few_row_linear.h"
#include "impl/model/kv_cache.h"
#include "impl/model/rms_norm.h"

namespace specgate {
namespace {

// The fewest tokens a forward pass with a cache cuts a long pass into.
constexpr int64_t kMinChunkTokens = 16;

// How a forward pass with a cache is cut: at most `tokens` tokens at once, and few enough that
// a chunk's attention scores (rows x heads x queries x keys) stay under `score_bytes`. Where
// `within_window`, a model whose every layer is windowed takes chunks no longer than its
// window: a chunk of T queries scores window + T keys each and uses at most the window of them.
struct ChunkBudget {
  int64_t tokens;
  int64_t score_bytes;
  bool within_window;
};

ChunkBudget chunk_budget(c10::Device device) {
  // On CPU, under glibc's mmap threshold (32 MiB), so that a pass's temporaries come from
  // memory the allocator keeps for reuse: glibc maps every larger block afresh and unmaps it
  // when freed, and faulting those pages back in costs more than the arithmetic of a small model.
  // Within the window, since a masked score costs a CPU the arithmetic of any other.
  if (device.is_cpu()) return {256, int64_t{16} << 20, true};
  // A device's caching allocator reuses blocks of any size: long chunks keep the device busy,
  // and the budget only bounds the memory of the scores.
  return {2048, int64_t{1} << 30, false};
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return bias.defined() ? at::linear(x, weight, bias) : few_row_linear(x, weight);
}

// When the keys that a batch's rows see none of before their first seen key (the left padding
// of rows shorter than the longest) hold at least this many bytes of K and V in a layer,
// attention runs row by row over each row's seen keys: a masked key costs the CPU the
// arithmetic and the memory traffic of any other, and a call a row costs little beside them.
constexpr int64_t kUnseenBytesForRowByRow = int64_t{1} << 20;

// Additive attention mask [B, 1, 1, T, S]: 0 where query t may see key s, -inf elsewhere.
// Every query sees its own slot, so rows of padding stay finite and never produce NaN.
// key_valid is [B, S], or [B, T, S] when each query has keys of its own, which then holds the
// sliding window too.
// `key_bytes`: the bytes of K and V that one key slot holds in a layer.
Transformer::AttentionMask attention_mask(const at::Tensor& key_valid, int64_t num_queries, int64_t first_query_slot,
                                          std::optional<int64_t> sliding_window, at::ScalarType dtype,
                                          int64_t key_bytes) {
  const int64_t num_keys = key_valid.size(-1);
  const auto index_options = at::TensorOptions().dtype(at::kLong).device(key_valid.device());
  const at::Tensor query_slot = at::arange(first_query_slot, first_query_slot + num_queries, index_options).unsqueeze(1);
  const at::Tensor key_slot = at::arange(num_keys, index_options).unsqueeze(0);
  const bool per_query_keys = key_valid.dim() == 3;
  at::Tensor visible = key_slot.le(query_slot);
  if (sliding_window && !per_query_keys) visible = visible.logical_and(query_slot.sub(key_slot).lt(*sliding_window));
  const at::Tensor per_query = per_query_keys ? key_valid : key_valid.unsqueeze(1);
  at::Tensor allowed = per_query.logical_and(visible.unsqueeze(0));  // [B, T, S]
  allowed = allowed.logical_or(key_slot.eq(query_slot).unsqueeze(0));
  Transformer::AttentionMask mask;
  mask.additive = at::zeros(allowed.sizes(), key_valid.options().dtype(dtype))
                      .masked_fill_(allowed.logical_not(), -std::numeric_limits<double>::infinity())
                      .view({allowed.size(0), 1, 1, num_queries, num_keys});
  // Reading where each row starts synchronises a device with the host: the CPU only.
  if (key_valid.device().is_cpu() && allowed.size(0) > 1) {
    const at::Tensor first_seen = allowed.any(1).to(at::kByte).argmax(-1).contiguous();  // the first of the maxima
    const std::span<const int64_t> first(first_seen.const_data_ptr<int64_t>(), first_seen.numel());
    if (std::accumulate(first.begin(), first.end(), int64_t{0}) * key_bytes >= kUnseenBytesForRowByRow) {
      mask.first_seen_key.assign(first.begin(), first.end());
    }
  }
  return mask;
}

// softmax(q k^T / sqrt(head_dim) + mask) v for queries [B, H, T, D], keys and values
// [B, kv_heads, S, D] and the additive mask [B, 1, 1, T, S]: [B, T, H * D]. Grouped-query
// attention without repeating K/V: each group's heads folded into the query axis; row by row
// over each row's seen keys where the mask says so.
at::Tensor grouped_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const Transformer::AttentionMask& mask, int64_t group) {
  if (few_query_attention_applies(q, group)) return few_query_attention(q, k, v, mask.additive);
  const int64_t batch = q.size(0), heads = q.size(1), steps = q.size(2), head_dim = q.size(3);
  const int64_t kv_heads = k.size(1), num_keys = k.size(2);
  const at::Tensor grouped_q = q.reshape({batch, kv_heads, group * steps, head_dim});
  const at::Tensor grouped_mask = mask.additive.to(q.scalar_type())
                                      .expand({batch, 1, group, steps, num_keys})
                                      .reshape({batch, 1, group * steps, num_keys});
  at::Tensor out;
  if (mask.first_seen_key.empty()) {
    out = at::scaled_dot_product_attention(grouped_q, k, v, grouped_mask);  // scale 1 / sqrt(head_dim)
  } else {
    std::vector<at::Tensor> rows;
    rows.reserve(batch);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t first = mask.first_seen_key[b], seen = num_keys - first;
      rows.push_back(at::scaled_dot_product_attention(grouped_q.narrow(0, b, 1), k.narrow(0, b, 1).narrow(2, first, seen),
                                                      v.narrow(0, b, 1).narrow(2, first, seen),
                                                      grouped_mask.narrow(0, b, 1).narrow(-1, first, seen)));
    }
    out = at::cat(rows, 0);
  }
  // reshape, not view: CUDA's attention kernels hand back their output with [B, T, H, D] strides.
  return out.reshape({batch, heads, steps, head_dim}).transpose(1, 2).reshape({batch, steps, heads * head_dim});
}

}  // namespace

Transformer::Transformer(ModelConfig config, ModelWeights weights)
    : config_(std::move(config)), weights_(std::move(weights)), rope_(config_, weights_.embed_tokens.options()) {
  // Every decode step attends over one key more, a shape cuDNN's attention has not planned for:
  // building its plan costs tens of milliseconds a step, the efficient kernel's nothing.
  if (options().device().is_cuda()) at::globalContext().setSDPUseCuDNN(false);
}

at::TensorOptions Transformer::options() const { return weights_.embed_tokens.options(); }

KVCache Transformer::make_cache(int64_t batch_size, int64_t slot_capacity) const {
  // With every layer windowed, a query at slot s reads keys from s - window + 1 on, and a pass
  // starts at the length or one slot before it (a drafter catching up a row whose cache lacks
  // a token).
  const std::optional<int64_t> attended = config_.layer_uses_window(0) ? config_.sliding_window : std::nullopt;
  return KVCache(config_.num_layers, batch_size, config_.num_kv_heads, slot_capacity, config_.head_dim, options(),
                 attended);
}

at::Tensor Transformer::attention(const LayerWeights& w, int64_t layer_index, const at::Tensor& x,
                                  const at::Tensor& cos, const at::Tensor& signed_sin, const AttentionMask& mask,
                                  int64_t first_key, KVCache* cache) const {
  const int64_t batch = x.size(0), steps = x.size(1), head_dim = config_.head_dim;
  const int64_t kv_heads = config_.num_kv_heads, group = config_.kv_group_size();
  // [B, T, heads, head_dim] while normed and rotated, where each head's values are contiguous.
  auto heads = [&](const at::Tensor& t, int64_t n) { return t.view({batch, steps, n, head_dim}); };
  at::Tensor q = heads(linear(x, w.q_proj, w.q_bias), config_.num_heads);
  at::Tensor k = heads(linear(x, w.k_proj, w.k_bias), kv_heads);
  if (config_.qk_norm) {
    q = rms_norm(q, w.q_norm, config_.rms_norm_eps);
    k = rms_norm(k, w.k_norm, config_.rms_norm_eps);
  }
  q = RotaryEmbedding::apply(q, cos, signed_sin).transpose(1, 2);
  k = RotaryEmbedding::apply(k, cos, signed_sin).transpose(1, 2);
  at::Tensor v = heads(linear(x, w.v_proj, w.v_bias), kv_heads).transpose(1, 2);
  if (cache != nullptr) std::tie(k, v) = cache->append(layer_index, k, v);
  if (first_key > 0) {
    k = k.narrow(2, first_key, k.size(2) - first_key);
    v = v.narrow(2, first_key, v.size(2) - first_key);
  }
  return linear(grouped_attention(q, k, v, mask, group), w.o_proj, w.o_bias);
}

at::Tensor Transformer::forward(const at::Tensor& tokens, const at::Tensor& positions, const at::Tensor& key_valid,
                                KVCache* cache, const at::Tensor& read_rows) const {
  TORCH_CHECK(tokens.dim() == 2 && positions.sizes() == tokens.sizes(), "forward: tokens and positions must be [B, T]");
  const int64_t first_slot = cache != nullptr ? cache->length() : 0, steps = tokens.size(1);
  const bool per_query = key_valid.dim() == 3;
  TORCH_CHECK((key_valid.dim() == 2 || (per_query && key_valid.size(1) == steps)) && key_valid.size(0) == tokens.size(0) &&
                  key_valid.size(-1) == first_slot + steps,
              "forward: key_valid must be [B, cache length + T] or [B, T, cache length + T]");
  TORCH_CHECK(cache == nullptr || cache->batch_size() == tokens.size(0), "forward: cache batch size differs");
  if (cache == nullptr || chunk_tokens(tokens.size(0), first_slot) >= steps) {
    return forward_chunk(tokens, positions, key_valid, cache, read_rows);
  }
  std::vector<at::Tensor> hidden;
  for (int64_t start = 0; start < steps;) {
    const int64_t count = std::min(chunk_tokens(tokens.size(0), first_slot + start), steps - start);
    const at::Tensor queries_valid = per_query ? key_valid.narrow(1, start, count) : key_valid;
    hidden.push_back(forward_chunk(tokens.narrow(1, start, count), positions.narrow(1, start, count),
                                   queries_valid.narrow(-1, 0, first_slot + start + count), cache, at::Tensor()));
    start += count;
  }
  return hidden.size() == 1 ? hidden.front() : at::cat(hidden, 1);
}

int64_t Transformer::chunk_tokens(int64_t batch, int64_t first_slot) const {
  const at::ScalarType dtype = weights_.embed_tokens.scalar_type();
  const int64_t score_bytes = at::isReducedFloatingType(dtype) ? 4 : static_cast<int64_t>(at::elementSize(dtype));
  const bool every_layer_windowed = config_.layer_uses_window(0);
  const ChunkBudget budget = chunk_budget(weights_.embed_tokens.device());
  int64_t chunk = budget.tokens;
  for (; chunk > kMinChunkTokens; chunk /= 2) {
    if (budget.within_window && every_layer_windowed && chunk > *config_.sliding_window) continue;
    const int64_t keys = every_layer_windowed ? std::min(*config_.sliding_window, first_slot) + chunk : first_slot + chunk;
    if (batch * config_.num_heads * chunk * keys * score_bytes <= budget.score_bytes) break;
  }
  return chunk;
}

at::Tensor Transformer::forward_chunk(const at::Tensor& tokens, const at::Tensor& positions,
                                      const at::Tensor& key_valid, KVCache* cache, const at::Tensor& read_rows) const {
  const int64_t first_slot = cache != nullptr ? cache->length() : 0;
  const at::ScalarType dtype = weights_.embed_tokens.scalar_type();
  const at::ScalarType mask_dtype = at::isReducedFloatingType(dtype) ? at::kFloat : dtype;
  const bool any_full_layer = !config_.sliding_window || config_.max_window_layers > 0;
  const int64_t key_bytes = 2 * config_.num_kv_heads * config_.head_dim * static_cast<int64_t>(at::elementSize(dtype));
  const AttentionMask full_mask =
      any_full_layer ? attention_mask(key_valid, tokens.size(1), first_slot, std::nullopt, mask_dtype, key_bytes)
                     : AttentionMask();
  // Windowed layers see only the keys of the last `window` slots before the first query.
  const int64_t window_start = config_.sliding_window ? std::max<int64_t>(first_slot - *config_.sliding_window + 1, 0) : 0;
  const AttentionMask window_mask =
      config_.sliding_window
          ? attention_mask(key_valid.narrow(-1, window_start, key_valid.size(-1) - window_start), tokens.size(1),
                           first_slot - window_start, config_.sliding_window, mask_dtype, key_bytes)
          : AttentionMask();
  const auto [cos, signed_sin] = rope_.cos_sin(positions);
  const double eps = config_.rms_norm_eps;

  at::Tensor x = at::embedding(weights_.embed_tokens, tokens);
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    const LayerWeights& w = weights_.layers[i];
    const bool windowed = config_.layer_uses_window(i);
    x = x + attention(w, i, rms_norm(x, w.input_norm, eps), cos, signed_sin, windowed ? window_mask : full_mask,
                      windowed ? window_start : 0, cache);
    const auto mlp = [&](const at::Tensor& h) {
      return few_row_linear(at::silu(few_row_linear(h, w.gate_proj)) * few_row_linear(h, w.up_proj), w.down_proj);
    };
    if (read_rows.defined()) {
      const at::Tensor rows = x.view({-1, x.size(-1)});  // x is this layer's own sum
      const at::Tensor read = rows.index_select(0, read_rows);
      rows.index_copy_(0, read_rows, read + mlp(rms_norm(read, w.post_attention_norm, eps)));
    } else {
      x = x + mlp(rms_norm(x, w.post_attention_norm, eps));
    }
  }
  if (cache != nullptr) cache->advance(tokens.size(1));
  return rms_norm(x, weights_.final_norm, eps);
}

at::Tensor Transformer::logits(const at::Tensor& hidden) const { return few_row_linear(hidden, weights_.lm_head); }

}  // namespace specgate
