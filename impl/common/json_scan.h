#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace specgate {

// A JSON syntax error at byte `offset` of the scanned text.
class JsonSyntaxError : public std::runtime_error {
 public:
  JsonSyntaxError(size_t offset, const std::string& message) : std::runtime_error(message), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

// Walks JSON text (RFC 8259, strings in UTF-8) checking its syntax without building values,
// so that a large member (a reference answer's top_logprobs) can be set aside unparsed and
// located again when needed. Every method throws JsonSyntaxError on malformed text.
class JsonScanner {
 public:
  JsonScanner(std::string_view text, size_t position = 0) : text_(text), position_(position) {}

  size_t position() const { return position_; }
  // Skips whitespace; the next byte, or '\0' at the end of the text.
  char peek();
  // The kind of the value that starts next, as messages name it: object, list, string,
  // number, boolean or null.
  std::string next_kind();
  void expect(char c);
  // The string that starts next, unescaped.
  std::string read_string();
  // Checks the value that starts next and moves past it.
  void skip_value();
  // Calls `on_member(key)` for each member of the object that starts next; the callback must
  // consume the member's value (skip_value() or a nested walk).
  void for_each_member(const std::function<void(const std::string&)>& on_member);
  // Calls `on_element()` for each element of the list that starts next; it must consume it.
  void for_each_element(const std::function<void()>& on_element);
  // Checks that only whitespace is left.
  void expect_end();

 private:
  [[noreturn]] void fail(const std::string& message) const;
  void scan_string(std::string* out);
  unsigned read_hex4();
  void scan_number();
  void scan_literal(std::string_view literal);
  void skip_value(int depth);

  std::string_view text_;
  size_t position_;
};

// The line (1-based) of JSON `text` on which the value at `path` starts, each step an object's
// key or a list's index in decimal; where a step finds nothing (a missing field), the line of the
// last value found. nullopt when `text` is not valid JSON. A key given twice counts where it is
// given last, as the parsed value keeps it.
std::optional<int64_t> json_value_line(std::string_view text, std::span<const std::string> path);

}  // namespace specgate
