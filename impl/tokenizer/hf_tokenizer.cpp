#include "impl/tokenizer/hf_tokenizer.h"

#include "impl/common/error.h"
#include "impl/common/json_value.h"
#include "impl/common/utf8.h"

namespace specgate {
namespace {

template <typename Component>
std::optional<Component> optional_component(const JsonNode& root, std::string_view key) {
  const std::optional<JsonNode> json = root.find(key);
  if (!json) return std::nullopt;
  return Component::from_json(*json);
}

}  // namespace

std::unique_ptr<HfTokenizer> HfTokenizer::load(const std::filesystem::path& tokenizer_json) {
  // JsonNode bounds the nesting of what it reads (kMaxNesting, as the tokenizers library does).
  const JsonFile file = read_json_file(tokenizer_json, tokenizer_json.string(), /*max_nesting=*/std::nullopt);
  const std::filesystem::path config_file = tokenizer_json.parent_path() / "tokenizer_config.json";
  return from_json(file, read_tokenizer_config(config_file), config_file.string());
}

std::unique_ptr<HfTokenizer> HfTokenizer::from_json(const JsonFile& file, TokenizerConfig config, const std::string& config_file) {
  const JsonNode root(file);
  if (!file.value.is_object()) root.fail("expected an object");
  if (root.find("truncation")) root["truncation"].fail("must be null: specgate does not truncate prompts");
  if (const std::optional<JsonNode> padding = root.find("padding"))
    if ((*padding)["strategy"].value() != "BatchLongest") (*padding)["strategy"].fail("only BatchLongest (no padding of one sequence) is supported");

  std::optional<Normalizer> normalizer = optional_component<Normalizer>(root, "normalizer");
  AddedTokens added;
  if (const std::optional<JsonNode> added_json = root.find("added_tokens"))
    added = AddedTokens::from_json(*added_json, normalizer ? &*normalizer : nullptr);
  std::unique_ptr<HfTokenizer> tokenizer(new HfTokenizer(BpeModel::from_json(root["model"]), std::move(added)));
  tokenizer->normalizer_ = std::move(normalizer);
  tokenizer->pre_tokenizer_ = optional_component<PreTokenizer>(root, "pre_tokenizer");
  if (const std::optional<JsonNode> post_processor = root.find("post_processor"))
    tokenizer->post_processor_ = PostProcessor::from_json(*post_processor, [&](int64_t id) {
      return tokenizer->added_.find(id) != nullptr || tokenizer->model_.token(id) != nullptr;
    });
  tokenizer->decoder_ = optional_component<TokenizerDecoder>(root, "decoder");

  tokenizer->config_ = std::move(config);
  const auto id_of = [&](const std::optional<std::string>& token, const char* field) -> std::optional<int64_t> {
    if (!token) return std::nullopt;
    const std::optional<int64_t> id = tokenizer->token_id(*token);
    if (!id) throw InputError(config_file + ": field '" + field + "': '" + *token + "' is not a token of tokenizer.json");
    return id;
  };
  tokenizer->special_ = {id_of(tokenizer->config_.bos_token, "bos_token"), id_of(tokenizer->config_.eos_token, "eos_token"),
                         id_of(tokenizer->config_.pad_token, "pad_token")};
  return tokenizer;
}

std::vector<int64_t> HfTokenizer::encode(std::string_view text) const {
  if (const std::optional<size_t> invalid = find_invalid_utf8(text))
    throw InputError("text to encode is not valid UTF-8 at byte " + std::to_string(*invalid));
  std::vector<TextPiece> pieces = added_.split(text, normalizer_ ? &*normalizer_ : nullptr);
  if (pre_tokenizer_) pre_tokenizer_->apply(pieces);
  std::vector<int64_t> ids;
  for (const TextPiece& piece : pieces) {
    if (piece.added_token) ids.push_back(*piece.added_token);
    else model_.encode_word(piece.text, ids);
  }
  return ids;
}

std::vector<int64_t> HfTokenizer::encode_prompt(std::string_view text) const {
  std::vector<int64_t> ids = encode(text);
  return post_processor_ ? post_processor_->apply(ids) : ids;
}

std::string HfTokenizer::decode_verbatim(std::span<const int64_t> ids) const {
  std::vector<std::string> tokens;
  for (int64_t id : ids) {
    if (const AddedToken* added = added_.find(id)) {
      if (!added->special) tokens.push_back(added->content);
    } else if (const std::string* token = model_.token(id)) {
      tokens.push_back(*token);
    }
  }
  if (decoder_) return decoder_->decode(std::move(tokens));
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) text.append(i == 0 ? "" : " ").append(tokens[i]);
  return text;
}

std::string HfTokenizer::decode(std::span<const int64_t> ids) const {
  std::string text = decode_verbatim(ids);
  return config_.clean_up_tokenization_spaces ? clean_up_tokenization(std::move(text)) : text;
}

int64_t HfTokenizer::vocab_size() const {
  int64_t largest = model_.max_id();
  for (const AddedToken& token : added_.all()) largest = std::max(largest, token.id);
  return largest + 1;
}

std::optional<int64_t> HfTokenizer::token_id(std::string_view token) const {
  if (const std::optional<int64_t> id = added_.id_of(token)) return id;
  return model_.token_id(token);
}

}  // namespace specgate
