// Fuzz target: a tokenizer.json and, after a form feed, its tokenizer_config.json, loaded as a
// checkpoint's tokenizer is; what loads encodes a fixed text and decodes its ids back.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/json_value.h"
#include "impl/tokenizer/hf_tokenizer.h"

namespace {

// Spaces, digits, punctuation, accents, CJK, an emoji, control bytes and common special tokens.
constexpr std::string_view kText = "Hello,  wörld! 123 日本語 🙂\n\t<|end|><s> don't</s>";

// The file `name` holding `text`, when `text` is valid JSON.
std::optional<specgate::JsonFile> json_file(std::string_view text, const char* name) {
  specgate::JsonError error;
  std::optional<nlohmann::json> value = specgate::parse_json(text, error, /*max_nesting=*/std::nullopt);  // as HfTokenizer::load reads it
  if (!value) return std::nullopt;
  return specgate::JsonFile{name, std::string(text), std::move(*value)};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specgate;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t form_feed = input.find('\f');
  const std::optional<JsonFile> tokenizer_json = json_file(input.substr(0, form_feed), "tokenizer.json");
  if (!tokenizer_json) return 0;
  std::optional<JsonFile> config_json;
  if (form_feed != std::string_view::npos) {
    config_json = json_file(input.substr(form_feed + 1), "tokenizer_config.json");
    if (!config_json) return 0;
  }
  try {
    TokenizerConfig config = config_json ? parse_tokenizer_config(*config_json) : TokenizerConfig{};
    const auto tokenizer = HfTokenizer::from_json(*tokenizer_json, std::move(config), "tokenizer_config.json");
    const std::vector<int64_t> ids = tokenizer->encode_prompt(kText);
    // Every id a tokenizer produces is one its vocabulary holds.
    for (int64_t id : ids)
      if (id < 0 || id >= tokenizer->vocab_size()) __builtin_trap();
    tokenizer->decode(ids);
  } catch (const InputError&) {
  }
  return 0;
}
