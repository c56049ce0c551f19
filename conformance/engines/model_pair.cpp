#include "conformance/engines/model_pair.h"

#include <iostream>
#include <string>

#include "impl/checkpoint/model_io.h"
#include "impl/common/error.h"

namespace specgate::cli {

ModelPair load_model_pair(const std::filesystem::path& target_dir, const std::filesystem::path& draft_dir,
                          at::ScalarType dtype, c10::Device device, bool require_tokenizer) {
  ModelPair pair{load_transformer(target_dir, dtype, device), nullptr, std::nullopt};
  try {
    pair.tokenizer = load_tokenizer(target_dir);
  } catch (const InputError& e) {
    if (require_tokenizer) throw;
    std::cerr << "conformance: " << e.what() << "; prompts come from the bench's prompt_token_ids and answers carry no text\n";
  }
  if (draft_dir.empty()) return pair;
  pair.draft.emplace(load_transformer(draft_dir, dtype, device));
  const int64_t draft_vocab = pair.draft->config().vocab_size, target_vocab = pair.target.config().vocab_size;
  if (draft_vocab != target_vocab)
    throw InputError((draft_dir / "config.json").string() + ": field 'vocab_size': " + std::to_string(draft_vocab) +
                     " differs from the target's " + std::to_string(target_vocab));
  return pair;
}

void check_encoded_ids(std::span<const int64_t> ids, const Transformer& target, const std::string& where) {
  const int64_t vocab = target.config().vocab_size;
  for (const int64_t id : ids) {
    if (id >= vocab)
      throw InputError(where + ": the tokenizer encodes it with token " + std::to_string(id) +
                       ", outside the target's vocabulary (" + std::to_string(vocab) + " tokens)");
  }
}

}  // namespace specgate::cli
