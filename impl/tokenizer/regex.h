#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace specgate {

// A Unicode-aware regular expression (PCRE2 with UTF and UCP), as tokenizer.json patterns
// are written: \p{L}, \p{N}, (?i:...), (?!\S).
class Regex {
 public:
  // Throws std::invalid_argument carrying PCRE2's message when `pattern` does not compile.
  // `source` names the pattern in messages: "<file>: field '<path>'".
  Regex(std::string_view pattern, std::string source);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // The byte ranges [begin, end) of successive non-overlapping matches in valid UTF-8 `text`.
  // Throws InputError naming the source when a match takes more steps than a pattern that works
  // through the text in linear time needs (one that backtracks exponentially).
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

  // `text` with every match replaced by `replacement` (taken literally).
  std::string replace_all(std::string_view text, std::string_view replacement) const;

  // A pattern that matches `literal` and nothing else.
  static std::string escape(std::string_view literal);

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
  std::string source_;
};

}  // namespace specgate
