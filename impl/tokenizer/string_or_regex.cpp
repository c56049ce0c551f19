#include "impl/tokenizer/string_or_regex.h"

#include <stdexcept>

namespace specgate {

std::shared_ptr<const Regex> string_or_regex(const JsonNode& pattern) {
  if (const std::optional<JsonNode> literal = pattern.find("String"))
    return std::make_shared<const Regex>(Regex::escape(literal->string()), literal->field_name());
  const std::optional<JsonNode> regex = pattern.find("Regex");
  if (!regex) pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
  try {
    return std::make_shared<const Regex>(regex->string(), regex->field_name());
  } catch (const std::invalid_argument& e) {
    regex->fail(e.what());
  }
}

}  // namespace specgate
