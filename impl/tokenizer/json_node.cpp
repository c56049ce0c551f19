#include "impl/tokenizer/json_node.h"

#include "impl/common/error.h"
#include "impl/common/json_scan.h"
#include "impl/common/utf8.h"

namespace specgate {

JsonNode::JsonNode(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), origin_(std::make_shared<const Origin>(Origin{std::move(file), std::move(path), {}})) {}

JsonNode::JsonNode(const JsonFile& file)
    : value_(&file.value), origin_(std::make_shared<const Origin>(Origin{file.name, "", file.text})) {}

JsonNode::JsonNode(const JsonNode& parent, const nlohmann::json& value, std::string name, bool is_index)
    : value_(&value),
      origin_(parent.origin_),
      step_(std::make_shared<const Step>(
          Step{parent.step_, std::move(name), is_index, parent.step_ ? parent.step_->depth + 1 : 1})) {}

JsonNode JsonNode::nested(const nlohmann::json& value, std::string name, bool is_index) const {
  JsonNode node(*this, value, std::move(name), is_index);
  if (node.nesting() > kMaxNesting)
    node.fail("nested deeper than " + std::to_string(kMaxNesting) +
              " arrays and objects, the most Hugging Face's tokenizers reads");
  return node;
}

int JsonNode::nesting() const { return (step_ ? step_->depth : 0) + (value_->is_structured() ? 1 : 0); }

JsonNode JsonNode::child(const nlohmann::json& value, std::string_view key) const {
  return nested(value, std::string(key), false);
}

JsonNode JsonNode::operator[](std::string_view key) const {
  if (!value_->is_object()) fail("expected an object");
  const auto it = value_->find(key);
  if (it == value_->end()) JsonNode(*this, *value_, std::string(key), false).fail("missing");  // nests nothing
  return child(*it, key);
}

std::optional<JsonNode> JsonNode::find(std::string_view key) const {
  if (!value_->is_object()) fail("expected an object");
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return child(*it, key);
}

JsonNode JsonNode::operator[](size_t index) const {
  return nested((*value_)[index], std::to_string(index), true);
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
  const std::string field = path();
  throw InputError(field.empty() ? where() + message : where() + "field '" + field + "': " + message);
}

void JsonNode::unsupported(const std::string& type) const {
  throw InputError(where() + path() + " type '" + type + "' is not supported");
}

std::string JsonNode::field_name() const { return origin_->file + ": field '" + path() + "'"; }

std::vector<const JsonNode::Step*> JsonNode::steps_from_origin() const {
  std::vector<const Step*> steps;
  for (const Step* step = step_.get(); step != nullptr; step = step->parent.get()) steps.push_back(step);
  return {steps.rbegin(), steps.rend()};
}

std::string JsonNode::path() const {
  std::string path = origin_->path;
  for (const Step* step : steps_from_origin()) {
    if (step->is_index) path.append("[").append(step->name).append("]");
    else path.append(path.empty() ? "" : ".").append(step->name);
  }
  return path;
}

std::string JsonNode::where() const {
  std::optional<int64_t> line;
  if (!origin_->text.empty()) {
    std::vector<std::string> names;
    for (const Step* step : steps_from_origin()) names.push_back(step->name);
    line = json_value_line(origin_->text, names);
  }
  std::string text = origin_->file;
  if (line) text.append(":").append(std::to_string(*line));
  return text.append(": ");
}

}  // namespace specgate
