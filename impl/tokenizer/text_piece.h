#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace specgate {

// One piece of the text being encoded. Added tokens found in the text become pieces with
// their id; the normalizer, pre-tokenizer and model only work on the others.
struct TextPiece {
  std::string text;
  bool at_text_start = false;  // begins at offset 0 of the original text
  std::optional<int64_t> added_token;
};

// How a pre-tokenizer cuts a piece around the matches of its pattern, named as in
// tokenizer.json's Split "behavior".
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Cuts `piece` into the non-empty pieces that `behavior` makes of its `matches` (byte ranges,
// in order, not overlapping), or of the gaps between them when `invert` is set. Appends them
// to `out`.
void split_piece(const TextPiece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<TextPiece>& out);

}  // namespace specgate
