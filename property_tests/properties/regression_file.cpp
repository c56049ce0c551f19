#include "property_tests/properties/regression_file.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/json_value.h"
#include "property_tests/properties/decode_properties.h"

namespace specgate::props {
namespace {

constexpr std::string_view kFormat = "specgate-regression/1";

// FNV-1a: a file name that stays the same for the same case on every platform.
std::string short_hash(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(hash));
  return std::string(out, 10);
}

}  // namespace

RegressionCase read_regression(const std::filesystem::path& path) {
  const JsonFile file = read_json_file(path);
  const std::string& source = file.name;
  const nlohmann::json& json = file.value;
  if (!json.is_object()) throw InputError(source + ": expected a JSON object");
  const auto field_error = [&](const std::string& field, const std::string& what) {
    return InputError(field_message(source, file.text, std::array{field}, field, what));
  };
  auto text = [&](const char* field) {
    if (!json.contains(field) || !json.at(field).is_string()) throw field_error(field, "expected a string");
    return json.at(field).get<std::string>();
  };
  if (text("format") != kFormat) throw field_error("format", "expected \"" + std::string(kFormat) + "\"");
  RegressionCase regression;
  regression.property = text("property");
  const auto& properties = decode_properties();
  if (std::none_of(properties.begin(), properties.end(), [&](const DecodeProperty& p) { return p.name == regression.property; }))
    throw field_error("property", "unknown property '" + regression.property + "'");
  if (json.contains("fault") && !json.at("fault").is_null()) {
    const std::string name = text("fault");
    for (Fault fault : all_faults()) {
      if (fault_name(fault) == name) regression.fault = fault;
    }
    if (!regression.fault) throw field_error("fault", "unknown fault '" + name + "'");
  }
  if (json.contains("verdict")) regression.verdict = text("verdict");
  if (json.contains("found_by")) regression.found_by = text("found_by");
  if (!json.contains("case")) throw field_error("case", "missing");
  regression.decode_case = decode_case_from_json(json.at("case"), source + " (case)");
  return regression;
}

std::filesystem::path write_regression(const std::filesystem::path& dir, const RegressionCase& regression) {
  const nlohmann::json case_json = to_json(regression.decode_case);
  const nlohmann::json json = {
      {"format", kFormat},
      {"property", regression.property},
      {"fault", regression.fault ? nlohmann::json(fault_name(*regression.fault)) : nlohmann::json(nullptr)},
      {"verdict", regression.verdict},
      {"found_by", regression.found_by},
      {"summary", summary(regression.decode_case)},
      {"case", case_json},
  };
  std::string name = regression.property;
  if (regression.fault) name.append("-").append(fault_name(*regression.fault));
  const std::filesystem::path path = dir / (name + "-" + short_hash(case_json.dump()) + ".json");
  std::filesystem::create_directories(dir);
  std::ofstream out(path);
  out << json.dump(2) << "\n";
  if (!out) throw InputError(path.string() + ": cannot write");
  return path;
}

}  // namespace specgate::props
