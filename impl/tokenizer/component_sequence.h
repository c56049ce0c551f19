#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "impl/tokenizer/json_node.h"

namespace specgate {

// The steps of a tokenizer.json component that may be a {"type": "Sequence"} of components of
// its kind (listed under `members_key`), flattened in order; `step_from_json(json, type)` parses
// each other member.
template <typename ParseStep, typename Step = std::invoke_result_t<const ParseStep&, const JsonNode&, const std::string&>>
std::vector<Step> component_steps(const JsonNode& json, std::string_view members_key, const ParseStep& step_from_json) {
  const std::string type = json["type"].string();
  if (type != "Sequence") return {step_from_json(json, type)};
  std::vector<Step> steps;
  const JsonNode members = json[members_key];
  for (size_t i = 0; i < members.size(); ++i) {
    std::vector<Step> inner = component_steps(members[i], members_key, step_from_json);
    steps.insert(steps.end(), std::make_move_iterator(inner.begin()), std::make_move_iterator(inner.end()));
  }
  return steps;
}

}  // namespace specgate
