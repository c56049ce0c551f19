#include "impl/scoring/rescorer.h"

#include <ATen/ATen.h>

#include "impl/bench/conversation.h"
#include "impl/checkpoint/model_io.h"
#include "impl/model/transformer.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {

struct Rescorer::Model {
  Transformer transformer;
  std::unique_ptr<Tokenizer> tokenizer;
  ChatTemplate chat_template;
};

Rescorer::Rescorer(const std::filesystem::path& dir, c10::ScalarType dtype, c10::Device device, ChatTemplate chat_template)
    : model_(std::make_unique<Model>(Model{load_transformer(dir, dtype, device), load_tokenizer(dir), chat_template})) {
  check_template_tokens({model_->tokenizer.get(), chat_template}, "--chat-template");
}

Rescorer::~Rescorer() = default;

int64_t Rescorer::vocab_size() const { return model_->transformer.config().vocab_size; }

ChatTemplate Rescorer::chat_template() const { return model_->chat_template; }

std::vector<int64_t> Rescorer::turn_prompt(const Question& question, size_t turn,
                                           std::span<const std::vector<int64_t>> earlier_answers) const {
  return specgate::turn_prompt({model_->tokenizer.get(), model_->chat_template}, question, turn, earlier_answers);
}

std::optional<RescoredLogprobs> Rescorer::next_token_logprobs(std::span<const int64_t> prompt,
                                                              std::span<const int64_t> prefix, int64_t reference_token,
                                                              int64_t candidate_token, std::string& why_not) const {
  std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  tokens.insert(tokens.end(), prefix.begin(), prefix.end());
  const int64_t length = static_cast<int64_t>(tokens.size());
  const int64_t positions_available = model_->transformer.config().max_position_embeddings;
  if (length == 0) {
    why_not = "the prompt and the common prefix are empty";
    return std::nullopt;
  }
  if (length > positions_available) {
    why_not = "prompt and common prefix take " + std::to_string(length) + " positions, the checkpoint has " +
              std::to_string(positions_available);
    return std::nullopt;
  }
  const auto ids = at::TensorOptions().dtype(at::kLong).device(model_->transformer.options().device());
  const at::Tensor input = at::tensor(tokens, ids).unsqueeze(0);
  const at::Tensor positions = at::arange(length, ids).unsqueeze(0);
  const at::Tensor key_valid = at::ones({1, length}, ids.dtype(at::kBool));
  const at::Tensor hidden = model_->transformer.forward(input, positions, key_valid, nullptr);
  const at::Tensor logprobs =
      model_->transformer.logits(hidden.select(1, length - 1)).squeeze(0).to(at::kDouble).log_softmax(-1).cpu();
  return RescoredLogprobs{logprobs[reference_token].item<double>(), logprobs[candidate_token].item<double>()};
}

}  // namespace specgate
