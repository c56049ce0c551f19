#include "impl/tokenizer/regex.h"

#include <stdexcept>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace specgate {
namespace {

std::string error_message(int code) {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(code, message, sizeof message);
  return reinterpret_cast<const char*>(message);
}

}  // namespace

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern) : compiled_(std::make_unique<Compiled>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                  PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (compiled_->code == nullptr)
    throw std::invalid_argument("regex does not compile at offset " + std::to_string(offset) + ": " + error_message(error));
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  const std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> data(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr), pcre2_match_data_free);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(compiled_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    // A resource limit: never cut the text differently without saying so.
    if (rc < 0) throw std::runtime_error("regex match failed: " + error_message(rc));
    const PCRE2_SIZE* range = pcre2_get_ovector_pointer(data.get());
    if (range[1] == range[0]) {  // an empty match: move on by one character
      start = range[1] + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
      continue;
    }
    matches.emplace_back(range[0], range[1]);
    start = range[1];
  }
  return matches;
}

std::string Regex::replace_all(std::string_view text, std::string_view replacement) const {
  std::string out;
  size_t done = 0;
  for (const auto& [begin, end] : find_all(text)) {
    out.append(text.substr(done, begin - done)).append(replacement);
    done = end;
  }
  return out.append(text.substr(done));
}

std::string Regex::escape(std::string_view literal) {
  std::string pattern = "\\Q";
  size_t done = 0;
  for (size_t end; (end = literal.find("\\E", done)) != std::string_view::npos; done = end + 2)
    pattern.append(literal.substr(done, end - done)).append("\\E\\\\E\\Q");
  return pattern.append(literal.substr(done)).append("\\E");
}

}  // namespace specgate
