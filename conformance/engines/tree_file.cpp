#include "conformance/engines/tree_file.h"

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/json_value.h"

namespace specgate::cli {
namespace {

using nlohmann::json;

// The integers of `value`, a list; InputError naming `field` otherwise.
std::vector<int64_t> integers(const json& value, const std::string& field, const std::string& where) {
  if (!value.is_array()) throw InputError(where + ": field '" + field + "': expected a list of integers, got " + describe_json(value));
  std::vector<int64_t> out;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::optional<int64_t> integer = value[i].is_number_integer() ? json_integer(value[i], -1, int64_t{1} << 20) : std::nullopt;
    if (!integer)
      throw InputError(where + ": field '" + field + "[" + std::to_string(i) + "]': expected an integer in [-1, 2^20], got " +
                       value[i].dump());
    out.push_back(*integer);
  }
  return out;
}

}  // namespace

TreeShape read_tree_file(const std::filesystem::path& path, const char* flag) {
  const std::string where = std::string(flag) + " " + path.string();
  std::ifstream in(path);
  if (!in) throw InputError(where + ": cannot be read");
  const json file = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded()) throw InputError(where + ": not valid JSON");
  try {
    if (file.is_array()) {
      std::vector<std::vector<int64_t>> choices;
      for (size_t i = 0; i < file.size(); ++i) choices.push_back(integers(file[i], "[" + std::to_string(i) + "]", where));
      return TreeShape::from_choices(choices);
    }
    if (!file.is_object() || !file.contains("parents"))
      throw InputError(where + ": expected a list of tree choices or an object with 'parents', got " + describe_json(file));
    for (const auto& [key, value] : file.items()) {
      if (key != "parents" && key != "ranks") throw InputError(where + ": field '" + key + "': not a field of a tree");
    }
    std::vector<int64_t> ranks;
    if (file.contains("ranks")) ranks = integers(file["ranks"], "ranks", where);
    return TreeShape(integers(file["parents"], "parents", where), std::move(ranks));
  } catch (const InputError& e) {
    const std::string message = e.what();
    if (message.starts_with(where)) throw;
    throw InputError(where + ": " + message);
  }
}

}  // namespace specgate::cli
