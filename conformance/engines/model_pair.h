#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <ATen/core/Tensor.h>

#include "impl/model/transformer.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {

// A target checkpoint, its tokenizer, and optionally a draft checkpoint that shares its
// vocabulary.
struct ModelPair {
  Transformer target;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<Transformer> draft;
  const Transformer* draft_or_null() const { return draft ? &*draft : nullptr; }
};

// Loads `target_dir`, and `draft_dir` unless it is empty; a draft whose vocabulary size
// differs from the target's is an InputError naming its config.json. Without
// `require_tokenizer`, a target with no usable tokenizer gets a null one, and why is said on
// stderr.
ModelPair load_model_pair(const std::filesystem::path& target_dir, const std::filesystem::path& draft_dir,
                          at::ScalarType dtype, c10::Device device, bool require_tokenizer = true);

// InputError "<where>: the tokenizer encodes it with token T, outside the target's vocabulary (V
// tokens)" when the tokenizer gave an id the target has no embedding for.
void check_encoded_ids(std::span<const int64_t> ids, const Transformer& target, const std::string& where);

}  // namespace specgate::cli
