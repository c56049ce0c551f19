#include "impl/model/weights.h"

#include <cmath>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace specgate {

std::vector<WeightSlot> weight_slots(const ModelConfig& c, ModelWeights& w) {
  const int64_t hidden = c.hidden_size, q_width = c.num_heads * c.head_dim, kv_width = c.num_kv_heads * c.head_dim;
  std::vector<WeightSlot> slots;
  slots.push_back({"model.embed_tokens.weight", {c.vocab_size, hidden}, &w.embed_tokens, false});
  w.layers.resize(c.num_layers);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    LayerWeights& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    slots.push_back({p + "input_layernorm.weight", {hidden}, &l.input_norm, true});
    slots.push_back({p + "self_attn.q_proj.weight", {q_width, hidden}, &l.q_proj, false});
    slots.push_back({p + "self_attn.k_proj.weight", {kv_width, hidden}, &l.k_proj, false});
    slots.push_back({p + "self_attn.v_proj.weight", {kv_width, hidden}, &l.v_proj, false});
    slots.push_back({p + "self_attn.o_proj.weight", {hidden, q_width}, &l.o_proj, false});
    if (c.qkv_bias) {
      slots.push_back({p + "self_attn.q_proj.bias", {q_width}, &l.q_bias, false});
      slots.push_back({p + "self_attn.k_proj.bias", {kv_width}, &l.k_bias, false});
      slots.push_back({p + "self_attn.v_proj.bias", {kv_width}, &l.v_bias, false});
    }
    if (c.o_bias) slots.push_back({p + "self_attn.o_proj.bias", {hidden}, &l.o_bias, false});
    if (c.qk_norm) {
      slots.push_back({p + "self_attn.q_norm.weight", {c.head_dim}, &l.q_norm, true});
      slots.push_back({p + "self_attn.k_norm.weight", {c.head_dim}, &l.k_norm, true});
    }
    slots.push_back({p + "post_attention_layernorm.weight", {hidden}, &l.post_attention_norm, true});
    slots.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, hidden}, &l.gate_proj, false});
    slots.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, hidden}, &l.up_proj, false});
    slots.push_back({p + "mlp.down_proj.weight", {hidden, c.intermediate_size}, &l.down_proj, false});
  }
  slots.push_back({"model.norm.weight", {hidden}, &w.final_norm, true});
  if (!c.tie_word_embeddings) slots.push_back({"lm_head.weight", {c.vocab_size, hidden}, &w.lm_head, false});
  return slots;
}

ModelWeights random_weights(const ModelConfig& config, const at::TensorOptions& options, uint64_t seed) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto cpu = at::TensorOptions().dtype(at::kDouble);
  ModelWeights weights;
  for (WeightSlot& slot : weight_slots(config, weights)) {
    at::Tensor value = at::empty(slot.shape, cpu);
    if (slot.is_norm) {
      value.uniform_(0.8, 1.2, generator);
    } else {
      value.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(slot.shape.back())), generator);
    }
    *slot.tensor = value.to(options);
  }
  if (config.tie_word_embeddings) weights.lm_head = weights.embed_tokens;
  return weights;
}

}  // namespace specgate
