#include "impl/common/json_value.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace specgate {
namespace {

using nlohmann::json;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// nlohmann's messages read "[json.exception.parse_error.101] parse error at line 1, column 7:
// syntax error ..." and "[json.exception.out_of_range.406] number overflow parsing '1e400'":
// the user needs what follows `marker`.
std::string detail_after(const json::exception& e, std::string_view marker) {
  const std::string_view text = e.what();
  const size_t at = text.find(marker);
  return std::string(at == std::string_view::npos ? text : text.substr(at + marker.size()));
}

}  // namespace

std::string describe_json(const json& value) {
  if (value.is_array()) return "list";
  if (value.is_number() || value.is_boolean()) return std::string(value.type_name()) + " " + value.dump();
  return value.type_name();
}

std::string JsonError::at(bool one_line) const {
  std::string where;
  if (column) where = one_line ? " at column " + std::to_string(*column) : " at line " + std::to_string(*line) + ", column " + std::to_string(*column);
  return where + ": " + detail;
}

std::optional<json> parse_json(std::string_view text, JsonError& error) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    error.detail = detail_after(e, ": ");
    const std::string_view read = text.substr(0, e.byte > 0 ? e.byte - 1 : 0);  // before the offending byte
    const size_t newline = read.rfind('\n');
    error.line = 1 + std::count(read.begin(), read.end(), '\n');
    error.column = static_cast<int64_t>(read.size() - (newline == std::string_view::npos ? 0 : newline + 1)) + 1;
  } catch (const json::exception& e) {  // out_of_range: a number overflowing double
    error.detail = detail_after(e, "] ");
  }
  return std::nullopt;
}

std::optional<json> parse_json(std::istream& in, JsonError& error) {
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_json(text, error);
}

std::optional<int64_t> json_integer(const json& value, int64_t low, int64_t high) {
  int64_t v = 0;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(kMax)) return std::nullopt;
    v = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    v = value.get<int64_t>();
  } else {
    return std::nullopt;
  }
  if (v < low || v > high) return std::nullopt;
  return v;
}

std::optional<uint64_t> json_unsigned(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

std::optional<double> json_number(const json& value) {
  if (!value.is_number()) return std::nullopt;
  const double v = value.get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::string integer_problem(const json& value, int64_t low, int64_t high, const std::string& expected) {
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(kMax))
    return value.dump() + " is out of range";
  std::string range = expected;
  if (range.empty() && high == kMax && low == kMin) range = "an integer";
  if (range.empty() && high == kMax && low == 0) range = "a non-negative integer";
  if (range.empty() && high == kMax && low == 1) range = "a positive integer";
  if (range.empty()) range = "an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
  return "expected " + range + ", got " + describe_json(value);
}

}  // namespace specgate
