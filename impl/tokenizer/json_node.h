#pragma once

#include <cstdint>
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
  JsonNode(const nlohmann::json& value, std::string file, std::string path = "")
      : value_(&value), file_(std::move(file)), path_(std::move(path)) {}
  // The root of a whole file, whose text must outlive the nodes.
  explicit JsonNode(const JsonFile& file) : value_(&file.value), file_(file.name), text_(file.text) {}

  const nlohmann::json& value() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
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

 private:
  JsonNode(const JsonNode& parent, const nlohmann::json& value, std::string path, std::string step);
  // "<file>:<line>: ", or "<file>: " when the line is unknown.
  std::string where() const;

  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
  std::string_view text_;           // the file's text; empty when unknown
  std::vector<std::string> steps_;  // the keys and indices from the root, when text_ is known
};

}  // namespace specgate
