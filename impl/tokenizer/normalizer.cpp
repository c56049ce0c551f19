#include "impl/tokenizer/normalizer.h"

#include <cstdlib>
#include <stdexcept>

#include <utf8proc.h>

#include "impl/tokenizer/component_sequence.h"
#include "impl/tokenizer/string_or_regex.h"

namespace specgate {

std::string nfc(const std::string& text) {
  utf8proc_uint8_t* composed = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(text.c_str()));
  if (composed == nullptr) throw std::invalid_argument("NFC: text is not valid UTF-8");
  std::string out(reinterpret_cast<const char*>(composed));
  std::free(composed);
  return out;
}

Normalizer Normalizer::from_json(const JsonNode& json) { return Normalizer(component_steps(json, "normalizers", step_from_json)); }

Normalizer::Step Normalizer::step_from_json(const JsonNode& json, const std::string& type) {
  if (type == "NFC") return Nfc{};
  if (type == "Prepend") return Prepend{json["prepend"].string()};
  if (type == "Replace") return Replace{string_or_regex(json["pattern"]), json["content"].string()};
  json.unsupported(type);
}

std::string Normalizer::apply(std::string text) const {
  for (const Step& step : steps_) {
    if (std::holds_alternative<Nfc>(step)) {
      text = nfc(text);
    } else if (const auto* prepend = std::get_if<Prepend>(&step)) {
      if (!text.empty()) text.insert(0, prepend->prefix);
    } else {
      const auto& replace = std::get<Replace>(step);
      text = replace.pattern->replace_all(text, replace.content);
    }
  }
  return text;
}

}  // namespace specgate
