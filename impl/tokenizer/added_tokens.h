#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "impl/tokenizer/json_node.h"
#include "impl/tokenizer/normalizer.h"
#include "impl/tokenizer/text_piece.h"

namespace specgate {

// tokenizer.json's "added_tokens": strings found in the text before the model sees it, as the
// Hugging Face libraries do by default (special tokens included), each with its options.
struct AddedToken {
  int64_t id;
  std::string content;
  bool special = false;
  bool lstrip = false;       // takes the white space on its left
  bool rstrip = false;       // takes the white space on its right
  bool normalized = true;    // matched in the normalized text rather than the original
  bool single_word = false;  // matched only where no word character touches it
};

class AddedTokens {
 public:
  // Throws InputError naming the file and field for a malformed entry. `normalizer` (when the
  // tokenizer has one) gives the normalized form of tokens marked "normalized".
  static AddedTokens from_json(const JsonNode& json, const Normalizer* normalizer);

  // Cuts the text into pieces: the added tokens found, and the text between them, normalized.
  std::vector<TextPiece> split(std::string_view text, const Normalizer* normalizer) const;

  const AddedToken* find(int64_t id) const;
  std::optional<int64_t> id_of(std::string_view content) const;
  const std::vector<AddedToken>& all() const { return tokens_; }

 private:
  // One pass over `pieces`: finds the tokens of `candidates` (indexes into tokens_) in each piece
  // that holds no token yet, with `patterns` the text each candidate matches.
  struct Matcher {
    std::vector<size_t> candidates;
    std::vector<std::string> patterns;
    std::unordered_map<unsigned char, std::vector<size_t>> by_first_byte;  // longest first
    void build();
  };
  void split_piece(const TextPiece& piece, const Matcher& matcher, std::vector<TextPiece>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int64_t, size_t> index_of_id_;
  std::unordered_map<std::string, size_t> index_of_content_;
  Matcher raw_, normalized_;
};

}  // namespace specgate
