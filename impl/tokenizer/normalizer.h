#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "impl/tokenizer/json_node.h"
#include "impl/tokenizer/regex.h"

namespace specgate {

// tokenizer.json's "normalizer": NFC, Prepend, Replace, or a Sequence of them.
class Normalizer {
 public:
  // Throws InputError naming the file and field for any other type or a malformed field.
  static Normalizer from_json(const JsonNode& json);

  std::string apply(std::string text) const;

 private:
  struct Nfc {};
  struct Prepend {
    std::string prefix;
  };
  struct Replace {
    std::shared_ptr<const Regex> pattern;
    std::string content;
  };
  using Step = std::variant<Nfc, Prepend, Replace>;

  explicit Normalizer(std::vector<Step> steps) : steps_(std::move(steps)) {}
  static Step step_from_json(const JsonNode& json, const std::string& type);

  std::vector<Step> steps_;
};

// Unicode canonical composition (NFC) of valid UTF-8 `text`.
std::string nfc(const std::string& text);

}  // namespace specgate
