#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/model/config.h"

namespace specgate {

struct LayerWeights {
  at::Tensor input_norm;
  at::Tensor q_proj, k_proj, v_proj, o_proj;
  at::Tensor q_bias, k_bias, v_bias, o_bias;  // undefined when the config has none
  at::Tensor q_norm, k_norm;                  // undefined unless config.qk_norm
  at::Tensor post_attention_norm;
  at::Tensor gate_proj, up_proj, down_proj;
};

struct ModelWeights {
  at::Tensor embed_tokens;
  std::vector<LayerWeights> layers;
  at::Tensor final_norm;
  at::Tensor lm_head;  // the same tensor as embed_tokens when embeddings are tied
};

// One weight a config calls for: its Hugging Face name, its shape, and where it lives.
struct WeightSlot {
  std::string name;
  std::vector<int64_t> shape;
  at::Tensor* tensor;
  bool is_norm;  // RMSNorm gains (initialised to one rather than at random)
};

// Every weight `config` calls for, in checkpoint order. A tied lm_head is not listed:
// it is set to embed_tokens by whoever fills the slots. `weights.layers` is resized.
std::vector<WeightSlot> weight_slots(const ModelConfig& config, ModelWeights& weights);

// Deterministic random weights for tests and fixtures: matrices normal with std
// 1/sqrt(fan-in), so activations stay of order one; norm gains uniform in [0.8, 1.2].
ModelWeights random_weights(const ModelConfig& config, const at::TensorOptions& options, uint64_t seed);

}  // namespace specgate
