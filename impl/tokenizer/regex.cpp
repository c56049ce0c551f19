#include "impl/tokenizer/regex.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "impl/common/error.h"

namespace specgate {
namespace {

std::string error_message(int code) {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(code, message, sizeof message);
  return reinterpret_cast<const char*>(message);
}

bool is_resource_limit(int code) {
  return code == PCRE2_ERROR_MATCHLIMIT || code == PCRE2_ERROR_DEPTHLIMIT || code == PCRE2_ERROR_HEAPLIMIT ||
         code == PCRE2_ERROR_JIT_STACKLIMIT;
}

// The searches of one text from successive places. A tokenizer's pattern may backtrack once per
// character of a long run of whitespace (Llama 3's \s*[\r\n]+ does) or nest a group once per
// character ((?:a|b)+), so PCRE2's match limit and, when a match needs more than the 32 KiB of
// machine stack JIT code gets by default, its JIT stack grow with the text; a pattern that
// backtracks exponentially still exceeds them.
class Search {
 public:
  Search(const pcre2_code* code, std::string_view text)
      : code_(code),
        text_(text),
        data_(pcre2_match_data_create_from_pattern(code, nullptr), pcre2_match_data_free),
        context_(pcre2_match_context_create(nullptr), pcre2_match_context_free) {}

  // PCRE2's result for the first match at or after byte `start`; match() gives its range.
  int from(size_t start) {
    pcre2_set_match_limit(context_.get(), match_limit(text_.size() - start));
    const int rc = match_from(start);
    if (rc != PCRE2_ERROR_JIT_STACKLIMIT || jit_stack_) return rc;
    jit_stack_.reset(pcre2_jit_stack_create(kDefaultJitStack, jit_stack_bytes(), nullptr));
    if (!jit_stack_) return rc;
    pcre2_jit_stack_assign(context_.get(), nullptr, jit_stack_.get());
    return match_from(start);
  }
  std::pair<size_t, size_t> match() const {
    const PCRE2_SIZE* range = pcre2_get_ovector_pointer(data_.get());
    return {range[0], range[1]};
  }

 private:
  static constexpr size_t kDefaultJitStack = 32 * 1024;

  static uint32_t match_limit(size_t text_bytes) {
    constexpr uint64_t kDefault = 10'000'000, kPerByte = 16;
    return static_cast<uint32_t>(std::min<uint64_t>(UINT32_MAX, std::max<uint64_t>(kDefault, kPerByte * text_bytes)));
  }
  size_t jit_stack_bytes() const {
    constexpr size_t kPerByte = 64, kMost = size_t{1} << 30;
    return std::clamp(kPerByte * text_.size(), kDefaultJitStack, kMost);
  }
  int match_from(size_t start) {
    return pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text_.data()), text_.size(), start, PCRE2_NO_UTF_CHECK,
                       data_.get(), context_.get());
  }

  const pcre2_code* code_;
  std::string_view text_;
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> data_;
  std::unique_ptr<pcre2_match_context, void (*)(pcre2_match_context*)> context_;
  std::unique_ptr<pcre2_jit_stack, void (*)(pcre2_jit_stack*)> jit_stack_{nullptr, pcre2_jit_stack_free};
};

}  // namespace

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern, std::string source)
    : compiled_(std::make_unique<Compiled>()), source_(std::move(source)) {
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
  Search search(compiled_->code, text);
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = search.from(start);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    // Never cut the text differently without saying so.
    if (is_resource_limit(rc))
      throw InputError(source_ + ": regex exceeded its match limit on a text of " + std::to_string(text.size()) +
                       " bytes (" + error_message(rc) + ")");
    if (rc < 0) throw std::runtime_error("regex match failed: " + error_message(rc));
    const auto [begin, end] = search.match();
    if (end == begin) {  // an empty match: move on by one character
      start = end + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
      continue;
    }
    matches.emplace_back(begin, end);
    start = end;
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
