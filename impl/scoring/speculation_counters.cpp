#include "impl/scoring/speculation_counters.h"

#include <string>
#include <vector>

#include "impl/common/error.h"
#include "impl/common/json_value.h"

namespace specgate {

nlohmann::json speculation_counters_json(const SpeculationCounters& counters) {
  nlohmann::json out = {{"drafts", counters.drafts},
                        {"draft_tokens", counters.draft_tokens},
                        {"accepted_tokens", counters.accepted_tokens},
                        {"accepted_per_position", counters.accepted_per_position}};
  if (counters.ragged_rounds) out["ragged_rounds"] = *counters.ragged_rounds;
  if (counters.realignments) out["realignments"] = *counters.realignments;
  return out;
}

SpeculationCounters read_speculation_counters_file(const std::filesystem::path& path) {
  const JsonFile file = read_json_file(path);
  const auto problem = [&](const std::vector<std::string>& at, const std::string& name, const std::string& what) {
    return InputError(field_message(file.name, file.text, at, name, what));
  };
  if (!file.value.is_object()) throw problem({}, "(top level)", "must be a JSON object, got " + describe_json(file.value));
  const auto count = [&](const nlohmann::json& value, const std::vector<std::string>& at, const std::string& name) {
    const std::optional<int64_t> n = json_integer(value, 0);
    if (!n) throw problem(at, name, integer_problem(value, 0, std::numeric_limits<int64_t>::max()));
    return *n;
  };
  const auto optional = [&](const char* field) -> std::optional<int64_t> {
    if (!file.value.contains(field)) return std::nullopt;
    return count(file.value.at(field), {field}, field);
  };
  const auto required = [&](const char* field) {
    if (!file.value.contains(field)) throw problem({}, field, "missing");
    return count(file.value.at(field), {field}, field);
  };
  SpeculationCounters counters{required("drafts"), required("draft_tokens"), required("accepted_tokens"),
                               optional("ragged_rounds"), optional("realignments")};
  if (file.value.contains("accepted_per_position")) {
    const nlohmann::json& list = file.value.at("accepted_per_position");
    if (!list.is_array())
      throw problem({"accepted_per_position"}, "accepted_per_position", "must be a list of counts, got " + describe_json(list));
    for (size_t j = 0; j < list.size(); ++j)
      counters.accepted_per_position.push_back(count(list[j], {"accepted_per_position", std::to_string(j)},
                                                     "accepted_per_position[" + std::to_string(j) + "]"));
  }
  return counters;
}

}  // namespace specgate
