#pragma once

#include <rapidcheck.h>

#include "fixtures/models/tiny_configs.h"
#include "impl/model/config.h"

namespace specgate::gen {

// Tiny model architectures: 1-3 layers, GQA ratios 1, 2 and 4, QK-norm on or off, q/k/v
// biases on or off, head sizes 2-16, sometimes a sliding window. Shrinks toward one layer,
// one KV head and the smallest heads.
inline rc::Gen<ModelConfig> tiny_model_config() {
  return rc::gen::exec([] {
    ModelConfig c = tiny_config(*rc::gen::element<std::string>("llama", "qwen2", "qwen3", "mistral"));
    c.num_layers = *rc::gen::inRange<int64_t>(1, 4);
    c.num_kv_heads = *rc::gen::inRange<int64_t>(1, 3);
    c.num_heads = c.num_kv_heads * *rc::gen::element<int64_t>(1, 2, 4);
    c.head_dim = 2 * *rc::gen::inRange<int64_t>(1, 9);
    c.hidden_size = *rc::gen::element<int64_t>(8, 16, 24);
    c.intermediate_size = 2 * c.hidden_size;
    c.qk_norm = *rc::gen::arbitrary<bool>();
    c.qkv_bias = *rc::gen::arbitrary<bool>();
    if (c.sliding_window) c.sliding_window = *rc::gen::inRange<int64_t>(1, 12);
    return c;
  });
}

}  // namespace specgate::gen
