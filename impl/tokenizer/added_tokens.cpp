#include "impl/tokenizer/added_tokens.h"

#include <algorithm>

#include <utf8proc.h>

namespace specgate {
namespace {

// The code point that starts at byte `at` of valid UTF-8 `text`, and its length.
std::pair<utf8proc_int32_t, size_t> code_point_at(std::string_view text, size_t at) {
  utf8proc_int32_t code_point = 0;
  const auto length = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data()) + at,
                                       static_cast<utf8proc_ssize_t>(text.size() - at), &code_point);
  return {code_point, length > 0 ? static_cast<size_t>(length) : 1};
}

size_t start_of_last_code_point(std::string_view text) {
  size_t at = text.size() - 1;
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  return at;
}

// Unicode White_Space, what \s means to the Rust library's regexes.
bool is_white_space(utf8proc_int32_t c) {
  if ((c >= 0x09 && c <= 0x0D) || c == 0x85) return true;
  const utf8proc_category_t category = utf8proc_category(c);
  return category == UTF8PROC_CATEGORY_ZS || category == UTF8PROC_CATEGORY_ZL || category == UTF8PROC_CATEGORY_ZP;
}

// What \w means to the Rust library's regexes: letters, marks, digits, connector punctuation.
bool is_word_character(utf8proc_int32_t c) {
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return c == 0x200C || c == 0x200D;
  }
}

}  // namespace

AddedTokens AddedTokens::from_json(const JsonNode& json, const Normalizer* normalizer) {
  AddedTokens added;
  for (size_t i = 0; i < json.size(); ++i) {
    const JsonNode entry = json[i];
    AddedToken token{entry["id"].integer(), entry["content"].string()};
    if (token.id < 0) entry["id"].fail("must not be negative");
    if (token.content.empty()) entry["content"].fail("must not be empty");
    token.special = entry.boolean_or("special", false);
    token.lstrip = entry.boolean_or("lstrip", false);
    token.rstrip = entry.boolean_or("rstrip", false);
    token.normalized = entry.boolean_or("normalized", !token.special);
    token.single_word = entry.boolean_or("single_word", false);
    added.index_of_id_.try_emplace(token.id, added.tokens_.size());
    added.index_of_content_.try_emplace(token.content, added.tokens_.size());
    added.tokens_.push_back(std::move(token));
  }
  for (size_t i = 0; i < added.tokens_.size(); ++i) {
    const AddedToken& token = added.tokens_[i];
    Matcher& matcher = token.normalized ? added.normalized_ : added.raw_;
    matcher.candidates.push_back(i);
    matcher.patterns.push_back(token.normalized && normalizer ? normalizer->apply(token.content) : token.content);
  }
  added.raw_.build();
  added.normalized_.build();
  return added;
}

void AddedTokens::Matcher::build() {
  for (size_t k = 0; k < patterns.size(); ++k)
    if (!patterns[k].empty()) by_first_byte[static_cast<unsigned char>(patterns[k][0])].push_back(k);
  for (auto& [byte, ks] : by_first_byte)
    std::stable_sort(ks.begin(), ks.end(), [&](size_t a, size_t b) { return patterns[a].size() > patterns[b].size(); });
}

const AddedToken* AddedTokens::find(int64_t id) const {
  const auto it = index_of_id_.find(id);
  return it == index_of_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int64_t> AddedTokens::id_of(std::string_view content) const {
  const auto it = index_of_content_.find(std::string(content));
  if (it == index_of_content_.end()) return std::nullopt;
  return tokens_[it->second].id;
}

// Leftmost-longest matches scanned left to right, as the Rust library's Aho-Corasick search.
void AddedTokens::split_piece(const TextPiece& piece, const Matcher& matcher, std::vector<TextPiece>& out) const {
  const std::string_view text = piece.text;
  size_t done = 0;  // end of the last piece cut
  const auto cut = [&](size_t begin, size_t end, std::optional<int64_t> id) {
    out.push_back({std::string(text.substr(begin, end - begin)), piece.at_text_start && begin == 0, id});
  };
  for (size_t at = 0; at < text.size();) {
    const auto bucket = matcher.by_first_byte.find(static_cast<unsigned char>(text[at]));
    const size_t* found = nullptr;
    if (bucket != matcher.by_first_byte.end())
      for (const size_t& k : bucket->second)
        if (text.substr(at).starts_with(matcher.patterns[k])) {
          found = &k;
          break;
        }
    if (found == nullptr) {
      ++at;
      continue;
    }
    const AddedToken& token = tokens_[matcher.candidates[*found]];
    size_t begin = at, end = at + matcher.patterns[*found].size();
    at = end;
    if (token.single_word) {
      const bool word_before = begin > 0 && is_word_character(code_point_at(text, start_of_last_code_point(text.substr(0, begin))).first);
      const bool word_after = end < text.size() && is_word_character(code_point_at(text, end).first);
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      while (begin > done) {
        const size_t previous = start_of_last_code_point(text.substr(0, begin));
        if (!is_white_space(code_point_at(text, previous).first)) break;
        begin = previous;
      }
    }
    if (token.rstrip) {
      while (end < text.size()) {
        const auto [code_point, length] = code_point_at(text, end);
        if (!is_white_space(code_point)) break;
        end += length;
      }
      at = end;
    }
    if (begin > done) cut(done, begin, std::nullopt);
    cut(begin, end, token.id);
    done = end;
  }
  if (done < text.size()) cut(done, text.size(), std::nullopt);
}

std::vector<TextPiece> AddedTokens::split(std::string_view text, const Normalizer* normalizer) const {
  std::vector<TextPiece> raw;
  split_piece({std::string(text), true, std::nullopt}, raw_, raw);
  std::vector<TextPiece> pieces;
  for (TextPiece& piece : raw) {
    if (piece.added_token) {
      pieces.push_back(std::move(piece));
      continue;
    }
    if (normalizer) piece.text = normalizer->apply(std::move(piece.text));
    split_piece(piece, normalized_, pieces);
  }
  return pieces;
}

}  // namespace specgate
