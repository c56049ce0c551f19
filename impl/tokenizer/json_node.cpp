#include "impl/tokenizer/json_node.h"

#include "impl/common/error.h"
#include "impl/common/json_scan.h"
#include "impl/common/utf8.h"

namespace specgate {

JsonNode::JsonNode(const JsonNode& parent, const nlohmann::json& value, std::string path, std::string step)
    : value_(&value), file_(parent.file_), path_(std::move(path)), text_(parent.text_) {
  if (text_.empty()) return;
  steps_ = parent.steps_;
  steps_.push_back(std::move(step));
}

JsonNode JsonNode::child(const nlohmann::json& value, std::string_view key) const {
  return JsonNode(*this, value, path_.empty() ? std::string(key) : path_ + "." + std::string(key), std::string(key));
}

JsonNode JsonNode::operator[](std::string_view key) const {
  if (!value_->is_object()) fail("expected an object");
  const auto it = value_->find(key);
  if (it == value_->end()) child(*value_, key).fail("missing");
  return child(*it, key);
}

std::optional<JsonNode> JsonNode::find(std::string_view key) const {
  if (!value_->is_object()) fail("expected an object");
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return child(*it, key);
}

JsonNode JsonNode::operator[](size_t index) const {
  return JsonNode(*this, (*value_)[index], path_ + "[" + std::to_string(index) + "]", std::to_string(index));
}

size_t JsonNode::size() const {
  if (!value_->is_array()) fail("expected an array");
  return value_->size();
}

std::string JsonNode::string() const {
  if (!value_->is_string()) fail("expected a string");
  return value_->get<std::string>();
}

bool JsonNode::boolean() const {
  if (!value_->is_boolean()) fail("expected true or false");
  return value_->get<bool>();
}

int64_t JsonNode::integer() const {
  if (!value_->is_number_integer()) fail("expected an integer");
  return value_->get<int64_t>();
}

std::string JsonNode::string_or(std::string_view key, std::string fallback) const {
  const std::optional<JsonNode> field = find(key);
  return field ? field->string() : fallback;
}

bool JsonNode::boolean_or(std::string_view key, bool fallback) const {
  const std::optional<JsonNode> field = find(key);
  return field ? field->boolean() : fallback;
}

std::string JsonNode::character() const {
  const std::string text = string();
  std::vector<int64_t> code_points;
  if (decode_utf8(text, code_points) || code_points.size() != 1) fail("expected one character");
  return text;
}

void JsonNode::fail(const std::string& message) const {
  throw InputError(path_.empty() ? where() + message : where() + "field '" + path_ + "': " + message);
}

void JsonNode::unsupported(const std::string& type) const {
  throw InputError(where() + path_ + " type '" + type + "' is not supported");
}

std::string JsonNode::where() const {
  const std::optional<int64_t> line = text_.empty() ? std::nullopt : json_value_line(text_, steps_);
  return file_ + (line ? ":" + std::to_string(*line) : "") + ": ";
}

}  // namespace specgate
