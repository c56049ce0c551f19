#include "impl/tokenizer/post_processor.h"

#include <utility>

#include "impl/tokenizer/component_sequence.h"

namespace specgate {

PostProcessor PostProcessor::from_json(const JsonNode& json, const std::function<bool(int64_t)>& is_token) {
  bool has_template = false;
  return PostProcessor(component_steps(json, "processors", [&](const JsonNode& step, const std::string& type) {
    // The tokenizers library gives a later TemplateProcessing the pieces of the first as a pair of
    // sequences, or fails on more than two; its output would also grow exponentially along a
    // Sequence whose templates repeat the text.
    if (type == "TemplateProcessing" && std::exchange(has_template, true))
      step.fail("only one TemplateProcessing is supported in a post_processor");
    return step_from_json(step, type, is_token);
  }));
}

PostProcessor::Template PostProcessor::step_from_json(const JsonNode& json, const std::string& type,
                                                      const std::function<bool(int64_t)>& is_token) {
  if (type == "ByteLevel") return Template{{std::monostate{}}};  // it only moves offsets, which specgate does not keep
  if (type != "TemplateProcessing") json.unsupported(type);
  const JsonNode single = json["single"];
  const JsonNode special_tokens = json["special_tokens"];
  Template step;
  for (size_t i = 0; i < single.size(); ++i) {
    const JsonNode item = single[i];
    if (const std::optional<JsonNode> sequence = item.find("Sequence")) {
      if ((*sequence)["id"].string() != "A") (*sequence)["id"].fail("a single sequence is \"A\"");
      step.items.emplace_back(std::monostate{});
      continue;
    }
    const std::optional<JsonNode> special = item.find("SpecialToken");
    if (!special) item.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    const std::string name = (*special)["id"].string();
    const std::optional<JsonNode> entry = special_tokens.find(name);
    if (!entry) (*special)["id"].fail("'" + name + "' is not in special_tokens");
    const JsonNode ids = (*entry)["ids"];
    std::vector<int64_t> values;
    for (size_t k = 0; k < ids.size(); ++k) {
      const int64_t id = ids[k].integer();
      if (!is_token(id)) ids[k].fail("id " + std::to_string(id) + " is not in the vocabulary");
      values.push_back(id);
    }
    step.items.emplace_back(std::move(values));
  }
  return step;
}

std::vector<int64_t> PostProcessor::apply(const std::vector<int64_t>& ids) const {
  std::vector<int64_t> out = ids;
  for (const Template& step : steps_) {
    std::vector<int64_t> next;
    for (const auto& item : step.items) {
      const auto* special = std::get_if<std::vector<int64_t>>(&item);
      const std::vector<int64_t>& part = special ? *special : out;
      next.insert(next.end(), part.begin(), part.end());
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace specgate
