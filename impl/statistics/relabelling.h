#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace specgate {

// The relabellings of a stratified two-sample permutation test: which units are on the first
// side, re-drawn within each stratum with its side counts kept (strata with units on one side
// only stay put). Every distinct relabelling once where they number no more than `permutations`
// (exact: the observed labelling is among them), else `permutations` drawn at random from `seed`.
struct Relabellings {
  int64_t count = 0;  // relabellings visited
  bool exact = false;
  int64_t exchangeable_units = 0;  // units of strata with units on both sides
  // The smallest p-value the design can give, whatever the values: one over the count (exact),
  // or over the count plus one.
  double smallest_p_value = 1.0;

  // The p-value from the number of relabellings whose statistic reached the observed one.
  double p_value(int64_t as_large) const;
};

// Calls `visit` with each relabelling's labels (one per unit, nonzero: first side).
Relabellings relabel(std::span<const char> is_first, std::span<const int64_t> strata, int64_t permutations,
                     uint64_t seed, const std::function<void(const std::vector<char>&)>& visit);

}  // namespace specgate
