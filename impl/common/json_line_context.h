#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate {

// What a wrong JSON value is called in messages: its kind, with the value for scalars.
inline std::string describe_json(const nlohmann::json& value) {
  if (value.is_array()) return "list";
  if (value.is_number() || value.is_boolean()) return std::string(value.type_name()) + " " + value.dump();
  return value.type_name();
}

// Errors about one line of one JSONL file: "<source>:<line>: ...", thrown as InputError.
class LineContext {
 public:
  LineContext(const std::string& source, int64_t line) : prefix_(source + ":" + std::to_string(line) + ": ") {}

  [[noreturn]] void fail(const std::string& message) const { throw InputError(prefix_ + message); }
  [[noreturn]] void fail_field(const std::string& field, const std::string& message) const {
    fail("field '" + field + "': " + message);
  }
  [[noreturn]] void fail_type(const std::string& field, const std::string& expected, const nlohmann::json& got) const {
    fail_field(field, "expected " + expected + ", got " + describe_json(got));
  }

 private:
  std::string prefix_;
};

}  // namespace specgate
