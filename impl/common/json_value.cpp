#include "impl/common/json_value.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>

#include "impl/common/error.h"
#include "impl/common/json_scan.h"
#include "impl/common/regular_file.h"

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

// The offset of the first number value of JSON `text` written as `literal` (a number nlohmann
// could not hold), walking values only so that a string with the same characters is passed by.
std::optional<size_t> find_number(std::string_view text, std::string_view literal) {
  JsonScanner scanner(text);
  std::optional<size_t> found;
  const std::function<void(int)> walk = [&](int depth) {
    if (depth > kMaxJsonNesting) throw JsonSyntaxError(scanner.position(), "too deep");
    const std::string kind = scanner.next_kind();
    if (kind == "object") return scanner.for_each_member([&](const std::string&) { walk(depth + 1); });
    if (kind == "list") return scanner.for_each_element([&] { walk(depth + 1); });
    const size_t start = scanner.position();
    scanner.skip_value();
    if (!found && kind == "number" && text.substr(start, scanner.position() - start) == literal) found = start;
  };
  try {
    walk(0);
  } catch (const JsonSyntaxError&) {
  }
  return found;
}

// The offset of the bracket that opens a list or an object nested deeper than `max_nesting`,
// outside strings; what follows it is not looked at.
std::optional<size_t> too_deep_at(std::string_view text, int max_nesting) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_nesting) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

// Where the byte at `offset` of `text` is, 1-based.
void locate(std::string_view text, size_t offset, JsonError& error) {
  const std::string_view read = text.substr(0, offset);
  const size_t newline = read.rfind('\n');
  error.line = 1 + std::count(read.begin(), read.end(), '\n');
  error.column = static_cast<int64_t>(read.size() - (newline == std::string_view::npos ? 0 : newline + 1)) + 1;
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

std::optional<json> parse_json(std::string_view text, JsonError& error, std::optional<int> max_nesting) {
  if (const std::optional<size_t> deep = max_nesting ? too_deep_at(text, *max_nesting) : std::nullopt) {
    error.detail = "lists and objects nested deeper than " + std::to_string(*max_nesting) + " levels";
    locate(text, *deep, error);
    return std::nullopt;
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    error.detail = detail_after(e, ": ");
    locate(text, e.byte > 0 ? e.byte - 1 : 0, error);  // the offending byte
  } catch (const json::exception& e) {  // out_of_range: a number overflowing double, "... parsing '1e400'"
    error.detail = detail_after(e, "] ");
    const size_t quote = error.detail.find('\'');
    if (quote != std::string::npos && error.detail.back() == '\'') {
      const std::string_view literal = std::string_view(error.detail).substr(quote + 1, error.detail.size() - quote - 2);
      if (const std::optional<size_t> offset = find_number(text, literal)) locate(text, *offset, error);
    }
  }
  return std::nullopt;
}

std::optional<json> parse_json(std::istream& in, JsonError& error) {
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_json(text, error);
}

JsonFile read_json_file(const std::filesystem::path& file) {
  return read_json_file(file, file.string());
}

JsonFile read_json_file(const std::filesystem::path& file, const std::string& name, std::optional<int> max_nesting) {
  JsonFile out{name, "", nullptr};
  out.text = RegularFile(file, name, kMaxJsonFileBytes, "a JSON file").read_rest();
  JsonError error;
  std::optional<json> parsed = parse_json(out.text, error, max_nesting);
  if (!parsed) throw InputError(out.name + ": not valid JSON" + error.at());
  out.value = std::move(*parsed);
  return out;
}

std::string field_message(const std::string& file, std::string_view text, std::span<const std::string> path,
                          const std::string& name, const std::string& what) {
  const std::optional<int64_t> line = text.empty() ? std::nullopt : json_value_line(text, path);
  return file + (line ? ":" + std::to_string(*line) : "") + ": field '" + name + "': " + what;
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
