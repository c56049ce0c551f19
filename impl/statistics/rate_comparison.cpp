#include "impl/statistics/rate_comparison.h"

#include <stdexcept>
#include <vector>

#include "impl/statistics/relabelling.h"

namespace specgate {

RateComparison compare_rates(std::span<const UnitEvents> first, std::span<const UnitEvents> second, int64_t permutations,
                             uint64_t seed) {
  if (permutations < 1) throw std::invalid_argument("a permutation test needs at least one permutation");
  RateComparison result;
  std::vector<const UnitEvents*> units;
  std::vector<char> is_first;
  std::vector<int64_t> strata;
  for (const auto& [side, members] : {std::pair{true, first}, std::pair{false, second}}) {
    for (const UnitEvents& unit : members) {
      if (unit.events < 0 || unit.events > unit.trials)
        throw std::invalid_argument("a rate comparison needs 0 <= events <= trials in every unit");
      (side ? result.first_events : result.second_events) += unit.events;
      (side ? result.first_trials : result.second_trials) += unit.trials;
      units.push_back(&unit);
      is_first.push_back(side);
      strata.push_back(unit.stratum);
    }
  }
  if (result.first_trials < 1 || result.second_trials < 1)
    throw std::invalid_argument("a rate comparison needs trials on both sides");
  const auto excess = [&](const std::vector<char>& labels) {
    double events[2] = {0.0, 0.0}, trials[2] = {0.0, 0.0};
    for (size_t u = 0; u < units.size(); ++u) {
      events[labels[u] ? 0 : 1] += static_cast<double>(units[u]->events);
      trials[labels[u] ? 0 : 1] += static_cast<double>(units[u]->trials);
    }
    // A relabelling that leaves a side without trials says nothing: never as large.
    if (trials[0] == 0.0 || trials[1] == 0.0) return -2.0;
    return events[0] / trials[0] - events[1] / trials[1];
  };
  const double observed = excess(is_first);
  int64_t as_large = 0;
  const Relabellings drawn = relabel(is_first, strata, permutations, seed, [&](const std::vector<char>& labels) {
    as_large += excess(labels) >= observed - 1e-12;
  });
  result.permutations = drawn.count;
  result.exact = drawn.exact;
  result.smallest_p_value = drawn.smallest_p_value;
  result.p_value = result.first_events + result.second_events == 0 ? 1.0 : drawn.p_value(as_large);
  return result;
}

}  // namespace specgate
