#pragma once

#include <cstdint>
#include <functional>
#include <variant>
#include <vector>

#include "impl/tokenizer/json_node.h"

namespace specgate {

// tokenizer.json's "post_processor" for one sequence: TemplateProcessing (the special tokens
// around the text, BOS for Llama 2), ByteLevel (ids unchanged), or a Sequence of them that holds
// at most one TemplateProcessing.
class PostProcessor {
 public:
  // Throws InputError naming the file and field for any other type, a malformed field, or a
  // special token's id for which `is_token` is false.
  static PostProcessor from_json(const JsonNode& json, const std::function<bool(int64_t)>& is_token);

  std::vector<int64_t> apply(const std::vector<int64_t>& ids) const;

 private:
  // The "single" template: special-token ids, and the ids so far where it holds monostate.
  struct Template {
    std::vector<std::variant<std::vector<int64_t>, std::monostate>> items;
  };
  explicit PostProcessor(std::vector<Template> steps) : steps_(std::move(steps)) {}
  static Template step_from_json(const JsonNode& json, const std::string& type, const std::function<bool(int64_t)>& is_token);

  std::vector<Template> steps_;
};

}  // namespace specgate
