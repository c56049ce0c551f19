#include "impl/common/json_scan.h"

#include <algorithm>

#include "impl/common/json_value.h"
#include "impl/common/utf8.h"

namespace specgate {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string describe_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7F) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 0xF];
}

}  // namespace

void JsonScanner::fail(const std::string& message) const { throw JsonSyntaxError(position_, message); }

char JsonScanner::peek() {
  while (position_ < text_.size()) {
    const char c = text_[position_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return c;
    ++position_;
  }
  return '\0';
}

std::string JsonScanner::next_kind() {
  switch (peek()) {
    case '{': return "object";
    case '[': return "list";
    case '"': return "string";
    case 't': case 'f': return "boolean";
    case 'n': return "null";
    default: return "number";
  }
}

void JsonScanner::expect(char c) {
  const char next = peek();
  if (next != c) {
    if (position_ == text_.size()) fail(std::string("expected '") + c + "', got the end of the line");
    fail(std::string("expected '") + c + "', got " + describe_byte(next));
  }
  ++position_;
}

std::string JsonScanner::read_string() {
  if (peek() != '"') fail("expected a string");
  std::string out;
  scan_string(&out);
  return out;
}

unsigned JsonScanner::read_hex4() {
  unsigned value = 0;
  for (int i = 0; i < 4; ++i, ++position_) {
    if (position_ == text_.size()) fail("unterminated \\u escape");
    const char c = text_[position_];
    const unsigned digit = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : 16;
    if (digit == 16) fail("invalid \\u escape: " + describe_byte(c) + " is not a hex digit");
    value = value * 16 + digit;
  }
  return value;
}

void JsonScanner::scan_string(std::string* out) {
  ++position_;  // the opening quote
  while (true) {
    const size_t run_start = position_;
    bool any_multibyte = false;
    while (position_ < text_.size()) {
      const auto byte = static_cast<unsigned char>(text_[position_]);
      if (byte == '"' || byte == '\\' || byte < 0x20) break;
      any_multibyte = any_multibyte || byte >= 0x80;
      ++position_;
    }
    const std::string_view run = text_.substr(run_start, position_ - run_start);
    if (any_multibyte) {
      if (const auto bad = find_invalid_utf8(run)) {
        position_ = run_start + *bad;
        fail("invalid UTF-8 in a string");
      }
    }
    if (out != nullptr) out->append(run);
    if (position_ == text_.size()) fail("unterminated string");
    const char c = text_[position_];
    if (c == '"') {
      ++position_;
      return;
    }
    if (c != '\\') fail("control character " + describe_byte(c) + " in a string (it must be escaped)");
    ++position_;
    if (position_ == text_.size()) fail("unterminated string");
    const char escape = text_[position_++];
    char plain = 0;
    switch (escape) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': {
        int64_t code_point = read_hex4();
        if (code_point >= 0xDC00 && code_point <= 0xDFFF) fail("invalid \\u escape: a lone low surrogate");
        if (code_point >= 0xD800 && code_point <= 0xDBFF) {
          if (text_.substr(position_, 2) != "\\u") fail("invalid \\u escape: a high surrogate without its low half");
          position_ += 2;
          const int64_t low = read_hex4();
          if (low < 0xDC00 || low > 0xDFFF) fail("invalid \\u escape: a high surrogate without its low half");
          code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
        }
        if (out != nullptr) append_utf8(code_point, *out);
        continue;
      }
      default:
        --position_;
        fail("invalid escape \\" + std::string(1, escape) + " in a string");
    }
    if (out != nullptr) out->push_back(plain);
  }
}

void JsonScanner::scan_number() {
  const auto digits = [this] {
    const size_t start = position_;
    while (position_ < text_.size() && is_digit(text_[position_])) ++position_;
    if (position_ == start) fail(position_ == text_.size() ? "number ends early" : "expected a digit, got " + describe_byte(text_[position_]));
  };
  if (text_[position_] == '-') ++position_;
  if (position_ < text_.size() && text_[position_] == '0') {
    ++position_;
  } else {
    digits();
  }
  if (position_ < text_.size() && text_[position_] == '.') {
    ++position_;
    digits();
  }
  if (position_ < text_.size() && (text_[position_] == 'e' || text_[position_] == 'E')) {
    ++position_;
    if (position_ < text_.size() && (text_[position_] == '+' || text_[position_] == '-')) ++position_;
    digits();
  }
}

void JsonScanner::scan_literal(std::string_view literal) {
  if (text_.substr(position_, literal.size()) != literal) fail("invalid literal, expected " + std::string(literal));
  position_ += literal.size();
}

void JsonScanner::skip_value() { skip_value(0); }

void JsonScanner::skip_value(int depth) {
  if (depth > kMaxJsonNesting) fail("nesting deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  const char c = peek();
  switch (c) {
    case '{':
      for_each_member([this, depth](const std::string&) { skip_value(depth + 1); });
      return;
    case '[':
      for_each_element([this, depth] { skip_value(depth + 1); });
      return;
    case '"': scan_string(nullptr); return;
    case 't': scan_literal("true"); return;
    case 'f': scan_literal("false"); return;
    case 'n': scan_literal("null"); return;
    case '\0':
      if (position_ == text_.size()) fail("expected a value, got the end of the line");
      break;
    default:
      if (c == '-' || is_digit(c)) {
        scan_number();
        return;
      }
  }
  fail("expected a value, got " + describe_byte(c));
}

void JsonScanner::for_each_member(const std::function<void(const std::string&)>& on_member) {
  expect('{');
  if (peek() == '}') {
    ++position_;
    return;
  }
  while (true) {
    if (peek() != '"') fail(position_ == text_.size() ? "expected a key, got the end of the line" : "expected a key, got " + describe_byte(text_[position_]));
    const std::string key = read_string();
    expect(':');
    on_member(key);
    if (peek() == ',') {
      ++position_;
      continue;
    }
    expect('}');
    return;
  }
}

void JsonScanner::for_each_element(const std::function<void()>& on_element) {
  expect('[');
  if (peek() == ']') {
    ++position_;
    return;
  }
  while (true) {
    on_element();
    if (peek() == ',') {
      ++position_;
      continue;
    }
    expect(']');
    return;
  }
}

void JsonScanner::expect_end() {
  if (peek() != '\0' || position_ != text_.size())
    fail("unexpected " + describe_byte(text_[position_]) + " after the end of the value");
}

std::optional<int64_t> json_value_line(std::string_view text, std::span<const std::string> path) {
  size_t start = 0;
  try {
    for (const std::string& step : path) {
      JsonScanner scanner(text, start);
      std::optional<size_t> found;
      const auto note = [&](bool match) {
        if (match) {
          scanner.peek();
          found = scanner.position();
        }
        scanner.skip_value();
      };
      if (scanner.peek() == '{') {
        scanner.for_each_member([&](const std::string& key) { note(key == step); });
      } else if (scanner.peek() == '[') {
        size_t index = 0;
        scanner.for_each_element([&] { note(std::to_string(index++) == step); });
      }
      if (!found) break;
      start = *found;
    }
  } catch (const JsonSyntaxError&) {
    return std::nullopt;
  }
  return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(start), '\n');
}

}  // namespace specgate
