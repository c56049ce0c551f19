#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/model/config.h"
#include "impl/model/rope.h"
#include "impl/model/weights.h"

namespace specgate {

class KVCache;

// A decoder-only transformer of the Llama family (Llama 2/3, Mistral, Qwen2, Qwen3) that runs
// left-padded batches with explicit position ids and a key-validity mask.
class Transformer {
 public:
  Transformer(ModelConfig config, ModelWeights weights);

  // tokens, positions: int64 [B, T]. key_valid: bool [B, S] over every key the new tokens may
  // see: S = cache->length() + T with a cache (the new tokens take slots [length, length+T)),
  // S = T without one; or [B, T, S], the keys each new token may see (a token tree's ancestors),
  // the sliding window, if any, included (within_window(): a tree's slots are not its
  // positions). A query attends to valid keys at or before its own slot (with [B, S], inside the
  // sliding window, if any, counted in slots); invalid keys have no influence on any result. Returns the
  // final-normed hidden states [B, T, hidden]; with a cache, their K/V are appended to it,
  // and a long T runs in chunks through the cache so that memory stays bounded.
  // read_rows: int64 indices into the B x T positions (row-major) of the hidden states the
  // caller reads, none of which may attend to a position left out; where the pass runs in one
  // chunk, the MLP runs over those alone, and the hidden states and K/V of the others are
  // unspecified (finite). Undefined: every position.
  at::Tensor forward(const at::Tensor& tokens, const at::Tensor& positions, const at::Tensor& key_valid,
                     KVCache* cache, const at::Tensor& read_rows = at::Tensor()) const;
  // Output logits [..., vocab] of hidden states from forward().
  at::Tensor logits(const at::Tensor& hidden) const;

  // An empty cache shaped for this model.
  KVCache make_cache(int64_t batch_size, int64_t slot_capacity) const;

  const ModelConfig& config() const { return config_; }

  // An additive attention mask [B, 1, 1, T, S] and, where attention runs row by row, each row's
  // first key that one of its queries sees (empty where it runs over the whole batch at once).
  struct AttentionMask {
    at::Tensor additive;
    std::vector<int64_t> first_seen_key;
  };
  const ModelWeights& weights() const { return weights_; }
  at::TensorOptions options() const;

 private:
  at::Tensor forward_chunk(const at::Tensor& tokens, const at::Tensor& positions, const at::Tensor& key_valid,
                           KVCache* cache, const at::Tensor& read_rows) const;
  // Tokens of a pass with `batch` rows, starting at cache slot `first_slot`, to run at once.
  int64_t chunk_tokens(int64_t batch, int64_t first_slot) const;
  // `first_key` is the first slot the mask covers: windowed layers skip the keys before it.
  at::Tensor attention(const LayerWeights& layer, int64_t layer_index, const at::Tensor& x,
                       const at::Tensor& cos, const at::Tensor& signed_sin, const AttentionMask& mask, int64_t first_key,
                       KVCache* cache) const;

  ModelConfig config_;
  ModelWeights weights_;
  RotaryEmbedding rope_;
};

}  // namespace specgate
