#include "impl/scoring/speculation_counters.h"

#include <fstream>
#include <string>

#include "impl/common/error.h"

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
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot be read");
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object()) throw InputError(path.string() + ": not a JSON object");
  const auto count = [&](const nlohmann::json& value, const std::string& field) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0)
      throw InputError(path.string() + ": field '" + field + "': must be an integer >= 0");
    return value.get<int64_t>();
  };
  const auto required = [&](const char* field) {
    if (!json.contains(field)) throw InputError(path.string() + ": field '" + field + "': missing");
    return count(json.at(field), field);
  };
  const auto optional = [&](const char* field) -> std::optional<int64_t> {
    if (!json.contains(field)) return std::nullopt;
    return count(json.at(field), field);
  };
  SpeculationCounters counters{required("drafts"), required("draft_tokens"), required("accepted_tokens"),
                               optional("ragged_rounds"), optional("realignments")};
  if (json.contains("accepted_per_position")) {
    const nlohmann::json& list = json.at("accepted_per_position");
    if (!list.is_array()) throw InputError(path.string() + ": field 'accepted_per_position': must be a list of counts");
    for (size_t j = 0; j < list.size(); ++j)
      counters.accepted_per_position.push_back(count(list[j], "accepted_per_position[" + std::to_string(j) + "]"));
  }
  return counters;
}

}  // namespace specgate
