#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "impl/tokenizer/json_node.h"

namespace specgate {

// Appends to `steps` the steps of a tokenizer.json component that may be a {"type": "Sequence"}
// of components of its kind (listed under `members_key`), flattened in order;
// `step_from_json(json, type)` parses each other member.
template <typename ParseStep, typename Step>
void append_component_steps(const JsonNode& json, std::string_view members_key, const ParseStep& step_from_json,
                            std::vector<Step>& steps) {
  const std::string type = json["type"].string();
  if (type != "Sequence") {
    steps.push_back(step_from_json(json, type));
    return;
  }
  const JsonNode members = json[members_key];
  for (size_t i = 0; i < members.size(); ++i) append_component_steps(members[i], members_key, step_from_json, steps);
}

// The steps of such a component.
template <typename ParseStep, typename Step = std::invoke_result_t<const ParseStep&, const JsonNode&, const std::string&>>
std::vector<Step> component_steps(const JsonNode& json, std::string_view members_key, const ParseStep& step_from_json) {
  std::vector<Step> steps;
  append_component_steps(json, members_key, step_from_json, steps);
  return steps;
}

}  // namespace specgate
