#include "impl/scoring/metrics.h"

#include <algorithm>

namespace specgate {
namespace {

std::optional<int64_t> symbol_at(const TurnSequences& turns, size_t turn, size_t index) {
  if (turn >= turns.size() || index >= turns[turn].size()) return std::nullopt;
  return turns[turn][index];
}

}  // namespace

int64_t total_length(const TurnSequences& turns) {
  int64_t total = 0;
  for (const auto& turn : turns) total += static_cast<int64_t>(turn.size());
  return total;
}

Comparison compare_answers(const TurnSequences& reference, const TurnSequences& candidate) {
  Comparison result;
  result.reference_length = total_length(reference);
  result.candidate_length = total_length(candidate);
  int64_t offset = 0;
  for (size_t t = 0; t < std::max(reference.size(), candidate.size()); ++t) {
    size_t common = 0;
    if (t < reference.size() && t < candidate.size()) {
      const auto& r = reference[t];
      const auto& c = candidate[t];
      const size_t shorter = std::min(r.size(), c.size());
      common = static_cast<size_t>(std::mismatch(r.begin(), r.begin() + shorter, c.begin()).first - r.begin());
      if (common == r.size() && common == c.size()) {
        offset += static_cast<int64_t>(common);
        continue;
      }
    }
    offset += static_cast<int64_t>(common);
    result.divergence = Divergence{.index = offset, .turn = static_cast<int64_t>(t),
                                   .index_in_turn = static_cast<int64_t>(common),
                                   .reference_symbol = symbol_at(reference, t, common),
                                   .candidate_symbol = symbol_at(candidate, t, common)};
    break;
  }
  result.exact = !result.divergence.has_value();
  result.lcp = offset;
  if (result.reference_length == 0) {
    result.partial = result.candidate_length == 0 ? 1.0 : 0.0;
  } else {
    result.partial = static_cast<double>(result.lcp) / static_cast<double>(result.reference_length);
  }
  return result;
}

}  // namespace specgate
