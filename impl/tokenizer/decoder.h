#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "impl/tokenizer/json_node.h"
#include "impl/tokenizer/regex.h"

namespace specgate {

// tokenizer.json's "decoder": ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, or a
// Sequence of them; it turns token strings back into text.
class TokenizerDecoder {
 public:
  // Throws InputError naming the file and field for any other type or a malformed field.
  static TokenizerDecoder from_json(const JsonNode& json);

  std::string decode(std::vector<std::string> tokens) const;

 private:
  struct ByteLevel {};
  struct ByteFallback {};
  struct Fuse {};
  struct Strip {
    std::string content;  // one character
    int64_t start, stop;
  };
  struct Replace {
    std::shared_ptr<const Regex> pattern;
    std::string content;
  };
  struct Metaspace {
    std::string replacement;
    bool strip_first_space;  // prepend_scheme other than "never"
  };
  using Step = std::variant<ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace>;

  explicit TokenizerDecoder(std::vector<Step> steps) : steps_(std::move(steps)) {}
  static Step step_from_json(const JsonNode& json, const std::string& type);

  std::vector<Step> steps_;
};

}  // namespace specgate
