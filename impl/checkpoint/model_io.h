#pragma once

#include <filesystem>

#include <ATen/core/Tensor.h>

#include "impl/model/transformer.h"

namespace specgate {

// Loads a Hugging Face checkpoint folder (config.json plus model.safetensors or a sharded
// index) into a Transformer of the given dtype on the given device. Every missing,
// unexpected, misshapen or non-floating tensor is an InputError naming file and tensor.
Transformer load_transformer(const std::filesystem::path& dir, at::ScalarType dtype, at::Device device);

// Writes config.json and model.safetensors (weights in their current dtype) to `dir`.
void save_transformer(const std::filesystem::path& dir, const Transformer& model);

}  // namespace specgate
