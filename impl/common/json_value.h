#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace specgate {

// What a wrong JSON value is called in messages: its kind, with the value for scalars.
std::string describe_json(const nlohmann::json& value);

// Why JSON text could not be parsed: nlohmann's detail, and where when known (1-based).
struct JsonError {
  std::string detail;
  std::optional<int64_t> line, column;
  // For messages: " at line L, column C: detail" (" at column C: detail" for one line of a
  // JSONL file, `one_line`), or ": detail" when the position is unknown.
  std::string at(bool one_line = false) const;
};

// The deepest nesting of lists and objects read from a user's JSON: deeper values are refused
// before they are parsed, since nlohmann's dump, copies and comparisons recurse once per level.
inline constexpr int kMaxJsonNesting = 512;

// Parses JSON text from a user's file without throwing: on malformed text, lists and objects
// nested deeper than `max_nesting`, or a number beyond double's range (1e400) returns nullopt and
// fills `error`. No `max_nesting` is for a reader that bounds the nesting of what it reads itself
// and never copies or prints the rest (the tokenizer's JsonNode).
std::optional<nlohmann::json> parse_json(std::string_view text, JsonError& error,
                                         std::optional<int> max_nesting = kMaxJsonNesting);
std::optional<nlohmann::json> parse_json(std::istream& in, JsonError& error);

// The largest JSON file read: the largest tokenizer.json files are about 35 MiB, and parsing
// takes up to about 40 bytes of memory per byte of text.
inline constexpr uintmax_t kMaxJsonFileBytes = uintmax_t{64} << 20;

// A user's JSON file read whole: its value, and its text to find a field's line for messages.
struct JsonFile {
  std::string name;  // as messages name the file
  std::string text;
  nlohmann::json value;
};
// Read through a RegularFile: throws InputError as it does (a missing file, a folder, a FIFO, a file
// larger than kMaxJsonFileBytes), or "<file>: not valid JSON at line L, column C: ...".
JsonFile read_json_file(const std::filesystem::path& file);
// The same, naming the file `name` in messages ("--tree tree.json"), nested as parse_json() allows.
JsonFile read_json_file(const std::filesystem::path& file, const std::string& name,
                        std::optional<int> max_nesting = kMaxJsonNesting);

// The message "<file>:<line>: field '<name>': <what>" for the value at `path` (keys and indices)
// of a JSON file, whose `text` gives the line (of the object that lacks it, when missing); with
// no `text`, "<file>: field '<name>': <what>".
std::string field_message(const std::string& file, std::string_view text, std::span<const std::string> path,
                          const std::string& name, const std::string& what);

// The checked conversions of JSON numbers read from a user's file: the value when it is an
// integer (3.0 is not) in [low, high], nullopt otherwise, so that no value wraps or overflows.
std::optional<int64_t> json_integer(const nlohmann::json& value, int64_t low = std::numeric_limits<int64_t>::min(),
                                    int64_t high = std::numeric_limits<int64_t>::max());
std::optional<uint64_t> json_unsigned(const nlohmann::json& value);
// The value when it is a finite number (integers included), nullopt otherwise.
std::optional<double> json_number(const nlohmann::json& value);

// Why json_integer(value, low, high) refused `value`, for messages: "expected a positive
// integer, got number 0", "expected an integer in [1, 64], got string", or "N is out of range"
// for an integer beyond int64. `expected` replaces the description of [low, high].
std::string integer_problem(const nlohmann::json& value, int64_t low, int64_t high, const std::string& expected = "");

}  // namespace specgate
