#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/ignored_field.h"
#include "impl/common/json_value.h"

namespace specgate {

// Errors about one line of one JSONL file: "<source>:<line>: ...", thrown as InputError.
class LineContext {
 public:
  LineContext(const std::string& source, int64_t line)
      : source_(source), line_(line), prefix_(source + ":" + std::to_string(line) + ": ") {}

  [[noreturn]] void fail(const std::string& message) const { throw InputError(prefix_ + message); }
  [[noreturn]] void fail_field(const std::string& field, const std::string& message) const {
    fail("field '" + field + "': " + message);
  }
  [[noreturn]] void fail_type(const std::string& field, const std::string& expected, const nlohmann::json& got) const {
    fail_field(field, "expected " + expected + ", got " + describe_json(got));
  }
  // A line that is no JSON object; on the first line, with the hint that the file must be JSONL
  // (a JSON array or a CSV file fails there).
  [[noreturn]] void fail_not_object(const std::string& kind) const { fail("expected a JSON object, got " + kind + jsonl_hint()); }

  // For an optional field the command does not use: warns once per field and file, and goes on.
  void ignore_type(const std::string& field, const std::string& expected, const nlohmann::json& got) const {
    warn_ignored_field(source_, line_, field, "expected " + expected + ", got " + describe_json(got));
  }

  // `value` as an integer in [low, high]; InputError naming the field otherwise.
  int64_t integer(const nlohmann::json& value, const std::string& field, int64_t low, int64_t high,
                  const std::string& expected = "") const {
    const std::optional<int64_t> integer = json_integer(value, low, high);
    if (!integer) fail_field(field, integer_problem(value, low, high, expected));
    return *integer;
  }

  // The line, or the part of it that starts at byte `start`, parsed; InputError "invalid JSON at
  // column N: <what>" otherwise, N counted in the whole line.
  nlohmann::json parse(std::string_view text, size_t start = 0) const {
    JsonError error;
    std::optional<nlohmann::json> parsed = parse_json(text, error);
    if (!parsed) {
      if (error.column) *error.column += static_cast<int64_t>(start);
      const size_t first = text.find_first_not_of(" \t");
      const bool opens_object = first != std::string_view::npos && text[first] == '{';
      fail("invalid JSON" + error.at(/*one_line=*/true) + (opens_object ? "" : jsonl_hint()));
    }
    return std::move(*parsed);
  }

 private:
  std::string jsonl_hint() const { return line_ == 1 ? " (the file must be JSONL: one JSON object per line)" : ""; }

  std::string source_;
  int64_t line_;
  std::string prefix_;
};

}  // namespace specgate
