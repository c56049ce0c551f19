#include "impl/tokenizer/tokenizer_config.h"

#include <utility>

#include "impl/tokenizer/json_node.h"

namespace specgate {
namespace {

// A token written as a string or as an AddedToken object {"content": ...}; null means none.
std::optional<std::string> token_field(const JsonNode& config, std::string_view key) {
  const std::optional<JsonNode> field = config.find(key);
  if (!field) return std::nullopt;
  if (field->value().is_object()) return (*field)["content"].string();
  return field->string();
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) return {};
  return parse_tokenizer_config(read_json_file(file));
}

TokenizerConfig parse_tokenizer_config(const JsonFile& file) {
  TokenizerConfig config;
  const JsonNode root(file);
  if (!file.value.is_object()) root.fail("expected an object");
  config.bos_token = token_field(root, "bos_token");
  config.eos_token = token_field(root, "eos_token");
  config.pad_token = token_field(root, "pad_token");
  config.clean_up_tokenization_spaces = root.boolean_or("clean_up_tokenization_spaces", false);
  return config;
}

std::string clean_up_tokenization(std::string text) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    std::string out;
    size_t done = 0;
    for (size_t at; (at = text.find(from, done)) != std::string::npos; done = at + from.size())
      out.append(text, done, at - done).append(to);
    text = out.append(text, done);
  }
  return text;
}

}  // namespace specgate
