#include "impl/tokenizer/text_piece.h"

#include <algorithm>

namespace specgate {
namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// The whole piece as alternating gaps and matches, as the Rust library's Pattern gives it.
std::vector<Span> spans_of(size_t length, const std::vector<std::pair<size_t, size_t>>& matches, bool invert) {
  std::vector<Span> spans;
  size_t done = 0;
  for (const auto& [begin, end] : matches) {
    if (begin > done) spans.push_back({done, begin, invert});
    spans.push_back({begin, end, !invert});
    done = end;
  }
  if (done < length || length == 0) spans.push_back({done, length, invert});
  return spans;
}

// Spans merged or dropped as `behavior` says; each result is kept.
std::vector<std::pair<size_t, size_t>> kept_ranges(const std::vector<Span>& spans, SplitBehavior behavior) {
  std::vector<std::pair<size_t, size_t>> kept;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Span& span : spans) kept.emplace_back(span.begin, span.end);
      break;
    case SplitBehavior::kRemoved:
      for (const Span& span : spans)
        if (!span.is_match) kept.emplace_back(span.begin, span.end);
      break;
    case SplitBehavior::kContiguous:
      for (const Span& span : spans) {
        if (span.is_match == previous_match && !kept.empty()) kept.back().second = span.end;
        else kept.emplace_back(span.begin, span.end);
        previous_match = span.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& span : spans) {
        if (span.is_match && !previous_match && !kept.empty()) kept.back().second = span.end;
        else kept.emplace_back(span.begin, span.end);
        previous_match = span.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto span = spans.rbegin(); span != spans.rend(); ++span) {
        if (span->is_match && !previous_match && !kept.empty()) kept.back().first = span->begin;
        else kept.emplace_back(span->begin, span->end);
        previous_match = span->is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  return kept;
}

}  // namespace

void split_piece(const TextPiece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<TextPiece>& out) {
  for (const auto& [begin, end] : kept_ranges(spans_of(piece.text.size(), matches, invert), behavior)) {
    if (begin == end) continue;
    out.push_back({piece.text.substr(begin, end - begin), piece.at_text_start && begin == 0, std::nullopt});
  }
}

}  // namespace specgate
