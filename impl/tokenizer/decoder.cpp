#include "impl/tokenizer/decoder.h"

#include "impl/common/utf8.h"
#include "impl/tokenizer/byte_level_alphabet.h"
#include "impl/tokenizer/component_sequence.h"
#include "impl/tokenizer/string_or_regex.h"

namespace specgate {
namespace {

std::vector<std::string> byte_level(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& token : tokens) {
    const std::optional<std::string> decoded = byte_level_to_bytes(token);
    bytes += decoded ? *decoded : token;
  }
  return {utf8_lossy(bytes)};
}

std::optional<unsigned char> byte_token(const std::string& token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  unsigned value = 0;
  for (char digit : token.substr(3, 2)) {
    const int nibble = digit >= '0' && digit <= '9' ? digit - '0'
                       : digit >= 'A' && digit <= 'F' ? digit - 'A' + 10
                       : digit >= 'a' && digit <= 'f' ? digit - 'a' + 10 : -1;
    if (nibble < 0) return std::nullopt;
    value = value * 16 + nibble;
  }
  return static_cast<unsigned char>(value);
}

std::vector<std::string> byte_fallback(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string bytes;
  const auto flush = [&] {
    if (bytes.empty()) return;
    if (find_invalid_utf8(bytes)) {
      for (size_t i = 0; i < bytes.size(); ++i) out.emplace_back(kReplacementCharacter);
    } else {
      out.push_back(bytes);
    }
    bytes.clear();
  };
  for (const std::string& token : tokens) {
    if (const std::optional<unsigned char> byte = byte_token(token)) {
      bytes.push_back(static_cast<char>(*byte));
      continue;
    }
    flush();
    out.push_back(token);
  }
  flush();
  return out;
}

std::vector<std::string> strip(const std::vector<std::string>& tokens, const std::string& content, int64_t start,
                               int64_t stop) {
  std::vector<std::string> out;
  for (std::string token : tokens) {
    for (int64_t i = 0; i < start && token.starts_with(content); ++i) token.erase(0, content.size());
    for (int64_t i = 0; i < stop && token.ends_with(content); ++i) token.erase(token.size() - content.size());
    out.push_back(std::move(token));
  }
  return out;
}

std::vector<std::string> metaspace(const std::vector<std::string>& tokens, const std::string& replacement,
                                   bool strip_first_space) {
  std::vector<std::string> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string text;
    const std::string_view token = tokens[i];
    for (size_t at = 0; at < token.size();) {
      if (token.substr(at).starts_with(replacement)) {
        if (i > 0 || !strip_first_space) text.push_back(' ');
        at += replacement.size();
      } else {
        text.push_back(token[at++]);
      }
    }
    out.push_back(std::move(text));
  }
  return out;
}

}  // namespace

TokenizerDecoder TokenizerDecoder::from_json(const JsonNode& json) { return TokenizerDecoder(component_steps(json, "decoders", step_from_json)); }

TokenizerDecoder::Step TokenizerDecoder::step_from_json(const JsonNode& json, const std::string& type) {
  if (type == "ByteLevel") return ByteLevel{};
  if (type == "ByteFallback") return ByteFallback{};
  if (type == "Fuse") return Fuse{};
  if (type == "Strip") {
    const int64_t start = json["start"].integer(), stop = json["stop"].integer();
    if (start < 0) json["start"].fail("must not be negative");
    if (stop < 0) json["stop"].fail("must not be negative");
    return Strip{json["content"].character(), start, stop};
  }
  if (type == "Replace") return Replace{string_or_regex(json["pattern"]), json["content"].string()};
  if (type == "Metaspace") {
    const std::string scheme = json.string_or("prepend_scheme", json.boolean_or("add_prefix_space", true) ? "always" : "never");
    if (scheme != "always" && scheme != "first" && scheme != "never")
      json["prepend_scheme"].fail("unknown prepend_scheme '" + scheme + "'");
    return Metaspace{json["replacement"].character(), scheme != "never"};
  }
  json.unsupported(type);
}

std::string TokenizerDecoder::decode(std::vector<std::string> tokens) const {
  for (const Step& step : steps_) {
    if (std::holds_alternative<ByteLevel>(step)) {
      tokens = byte_level(tokens);
    } else if (std::holds_alternative<ByteFallback>(step)) {
      tokens = byte_fallback(tokens);
    } else if (std::holds_alternative<Fuse>(step)) {
      std::string joined;
      for (const std::string& token : tokens) joined += token;
      tokens = {joined};
    } else if (const auto* s = std::get_if<Strip>(&step)) {
      tokens = strip(tokens, s->content, s->start, s->stop);
    } else if (const auto* replace = std::get_if<Replace>(&step)) {
      for (std::string& token : tokens) token = replace->pattern->replace_all(token, replace->content);
    } else {
      const auto& m = std::get<Metaspace>(step);
      tokens = metaspace(tokens, m.replacement, m.strip_first_space);
    }
  }
  std::string text;
  for (const std::string& token : tokens) text += token;
  return text;
}

}  // namespace specgate
