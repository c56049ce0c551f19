#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace specgate {

// An answer as compared: one sequence of symbols (token ids or Unicode code points) per turn.
using TurnSequences = std::vector<std::vector<int64_t>>;

// Where two answers first differ.
struct Divergence {
  int64_t index = 0;          // in the concatenation of the turns; equals the LCP
  int64_t turn = 0;
  int64_t index_in_turn = 0;
  std::optional<int64_t> reference_symbol;  // absent where the reference's turn had ended
  std::optional<int64_t> candidate_symbol;  // absent where the candidate's turn had ended
};

// DESIGN.md section 4 for one question, over all turns in order: turns are compared one by
// one (turn t of each side), so a symbol never matches across a turn boundary.
struct Comparison {
  bool exact = false;                   // same number of turns, every turn identical
  int64_t lcp = 0;                      // common prefix of the concatenated turns, up to the first difference
  int64_t reference_length = 0;         // |R|, all turns
  int64_t candidate_length = 0;         // |C|, all turns
  double partial = 0.0;                 // lcp / |R|; 1 when both are empty, 0 when only R is
  std::optional<Divergence> divergence;  // absent when exact
};

// Symbols over all turns.
int64_t total_length(const TurnSequences& turns);

Comparison compare_answers(const TurnSequences& reference, const TurnSequences& candidate);

}  // namespace specgate
