#pragma once

#include <filesystem>
#include <optional>

#include "impl/tokenizer/added_tokens.h"
#include "impl/tokenizer/bpe_model.h"
#include "impl/tokenizer/decoder.h"
#include "impl/tokenizer/normalizer.h"
#include "impl/tokenizer/post_processor.h"
#include "impl/tokenizer/pre_tokenizer.h"
#include "impl/tokenizer/tokenizer.h"
#include "impl/tokenizer/tokenizer_config.h"

namespace specgate {

// A Hugging Face tokenizer.json with a BPE model, run as the Rust `tokenizers` library runs it:
// added tokens, normalizer, pre-tokenizer, model, post-processor; decoder to read ids back.
class HfTokenizer final : public Tokenizer {
 public:
  // Reads `tokenizer_json` and, when present, tokenizer_config.json beside it. Throws
  // InputError naming the file and field (or the unsupported component).
  static std::unique_ptr<HfTokenizer> load(const std::filesystem::path& tokenizer_json);
  // The same from the files read: `file` and `config`, read from `config_file`.
  static std::unique_ptr<HfTokenizer> from_json(const JsonFile& file, TokenizerConfig config, const std::string& config_file);

  std::vector<int64_t> encode(std::string_view text) const override;
  std::vector<int64_t> encode_prompt(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  int64_t vocab_size() const override;
  const SpecialTokens& special_tokens() const override { return special_; }
  std::optional<int64_t> token_id(std::string_view token) const override;

  // decode() without transformers' clean-up of spaces, whatever the config says.
  std::string decode_verbatim(std::span<const int64_t> ids) const;
  const AddedTokens& added_tokens() const { return added_; }

 private:
  HfTokenizer(BpeModel model, AddedTokens added) : model_(std::move(model)), added_(std::move(added)) {}

  BpeModel model_;
  AddedTokens added_;
  std::optional<Normalizer> normalizer_;
  std::optional<PreTokenizer> pre_tokenizer_;
  std::optional<PostProcessor> post_processor_;
  std::optional<TokenizerDecoder> decoder_;
  TokenizerConfig config_;
  SpecialTokens special_;
};

}  // namespace specgate
