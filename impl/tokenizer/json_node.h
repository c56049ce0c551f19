#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/common/json_value.h"

namespace specgate {

// A value inside a tokenizer file and where it sits, so that every error names the file, the
// line when the file's text is known, and the field path: "<file>:<line>: field 'model.merges[3]':
// expected a string".
class JsonNode {
 public:
  // The most arrays and objects nested in one another (the file's root included) that Hugging
  // Face's tokenizers reads; a node nested deeper is an error.
  static constexpr int kMaxNesting = 127;

  JsonNode(const nlohmann::json& value, std::string file, std::string path = "");
  // The root of a whole file, whose text must outlive the nodes.
  explicit JsonNode(const JsonFile& file);

  const nlohmann::json& value() const { return *value_; }
  bool is_null() const { return value_->is_null(); }

  // A field that must be present (null counts as present).
  JsonNode operator[](std::string_view key) const;
  // A field that may be absent or null.
  std::optional<JsonNode> find(std::string_view key) const;
  JsonNode operator[](size_t index) const;
  // The node of `value`, the member `key` of this object (as items() gives both).
  JsonNode child(const nlohmann::json& value, std::string_view key) const;
  size_t size() const;  // elements of an array

  std::string string() const;
  bool boolean() const;
  int64_t integer() const;
  std::string string_or(std::string_view key, std::string fallback) const;
  bool boolean_or(std::string_view key, bool fallback) const;
  // The one character of a string field such as Metaspace's "replacement", as UTF-8.
  std::string character() const;

  [[noreturn]] void fail(const std::string& message) const;
  // "<file>: <component> type '<type>' is not supported", with the component named by path.
  [[noreturn]] void unsupported(const std::string& type) const;
  // "<file>: field '<path>'", for messages about the field once the file's text is gone.
  std::string field_name() const;

 private:
  // What every node of one file shares.
  struct Origin {
    std::string file;
    std::string path;       // the field path of the origin itself
    std::string_view text;  // the file's text; empty when unknown
  };
  // The key or index that leads to a node from its parent, linked to the steps before it, so
  // that a node costs one step however deep it lies.
  struct Step {
    std::shared_ptr<const Step> parent;
    std::string name;  // a key, or an index in decimal
    bool is_index;
    int depth;  // steps from the origin
  };

  JsonNode(const JsonNode& parent, const nlohmann::json& value, std::string name, bool is_index);
  // The node of `value`, reached from this one by `name`; fails when it is nested too deep.
  JsonNode nested(const nlohmann::json& value, std::string name, bool is_index) const;
  // The arrays and objects from the origin to this node, both included.
  int nesting() const;
  std::vector<const Step*> steps_from_origin() const;
  std::string path() const;
  // "<file>:<line>: ", or "<file>: " when the line is unknown.
  std::string where() const;

  const nlohmann::json* value_;
  std::shared_ptr<const Origin> origin_;
  std::shared_ptr<const Step> step_;  // null at the origin
};

}  // namespace specgate
