#include "impl/statistics/permutation_ks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "impl/statistics/relabelling.h"
#include "impl/statistics/uniformity.h"

namespace specgate {
namespace {

struct Pooled {
  double value;
  int32_t unit;
};

// D between the values of the units marked first and the rest, over the pooled values in
// ascending order, and the sides' value counts.
struct Split {
  double distance = 1.0;
  int64_t n = 0, m = 0;
  // D sqrt(n m / (n + m)): its law under the hypothesis hardly depends on n and m, where D's
  // shrinks as they grow. Relabelling answers of unequal lengths moves n and m, so comparing D
  // itself across relabellings would set the observed split against others of other sizes.
  double scaled() const {
    return distance * std::sqrt(static_cast<double>(n) * static_cast<double>(m) / static_cast<double>(n + m));
  }
};

Split pooled_distance(std::span<const Pooled> sorted, const std::vector<char>& is_first,
                      const std::vector<int64_t>& lengths) {
  int64_t n = 0, m = 0;
  for (size_t u = 0; u < lengths.size(); ++u) (is_first[u] ? n : m) += lengths[u];
  if (n == 0 || m == 0) return {.distance = 1.0, .n = std::max<int64_t>(n, 1), .m = std::max<int64_t>(m, 1)};
  const double per_first = 1.0 / static_cast<double>(n), per_second = 1.0 / static_cast<double>(m);
  double difference = 0.0, distance = 0.0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    difference += is_first[sorted[i].unit] ? per_first : -per_second;
    if (i + 1 == sorted.size() || sorted[i + 1].value != sorted[i].value)
      distance = std::max(distance, std::abs(difference));
  }
  return {.distance = distance, .n = n, .m = m};
}

double effective_units(std::span<const SampleUnit> units) {
  double total = 0.0, squares = 0.0;
  for (const SampleUnit& unit : units) {
    const auto length = static_cast<double>(unit.values.size());
    total += length;
    squares += length * length;
  }
  return squares > 0.0 ? total * total / squares : 0.0;
}

}  // namespace

PermutationKsTest permutation_ks_test(std::span<const SampleUnit> first, std::span<const SampleUnit> second,
                                      int64_t permutations, uint64_t seed, double level) {
  if (permutations < 1) throw std::invalid_argument("a permutation test needs at least one permutation");
  if (!(level > 0.0 && level < 1.0)) throw std::invalid_argument("a test level needs alpha in (0, 1)");
  PermutationKsTest test;
  test.level = level;
  test.first_units = static_cast<int64_t>(first.size());
  test.second_units = static_cast<int64_t>(second.size());

  std::vector<Pooled> pooled;
  std::vector<int64_t> lengths, strata;
  std::vector<char> is_first;
  for (const auto& [side, units] : {std::pair{true, first}, std::pair{false, second}}) {
    for (const SampleUnit& unit : units) {
      const auto index = static_cast<int32_t>(lengths.size());
      for (const double value : unit.values) {
        if (!(value >= 0.0 && value <= 1.0))
          throw std::invalid_argument("a permutation test's value is " + std::to_string(value) + ", outside [0, 1]");
        pooled.push_back({value, index});
      }
      lengths.push_back(static_cast<int64_t>(unit.values.size()));
      is_first.push_back(side);
      strata.push_back(unit.stratum);
      (side ? test.first_values : test.second_values) += static_cast<int64_t>(unit.values.size());
    }
  }
  if (test.first_values == 0 || test.second_values == 0)
    throw std::invalid_argument("a two-sample test needs values on both sides");
  std::ranges::sort(pooled, {}, &Pooled::value);
  const Split observed = pooled_distance(pooled, is_first, lengths);
  test.distance = observed.distance;

  std::vector<double> distances;  // D of each relabelling, for the detectable distance
  int64_t as_large = 0;
  const Relabellings drawn = relabel(is_first, strata, permutations, seed, [&](const std::vector<char>& labels) {
    const Split split = pooled_distance(pooled, labels, lengths);
    distances.push_back(split.distance);
    // Equal up to rounding in the sums counts as large: the p-value stays valid.
    as_large += split.scaled() >= observed.scaled() - 1e-12;
  });
  test.permutations = drawn.count;
  test.exact = drawn.exact;
  test.exchangeable_units = drawn.exchangeable_units;
  test.p_value = drawn.p_value(as_large);
  test.smallest_p_value = drawn.smallest_p_value;

  test.first_effective_units = effective_units(first);
  test.second_effective_units = effective_units(second);
  std::ranges::sort(distances);
  const auto ranks = static_cast<double>(distances.size() + (test.exact ? 0 : 1));
  const auto rank = static_cast<size_t>(std::ceil((1.0 - level) * ranks)) - 1;
  const double critical = rank < distances.size() ? distances[rank] : 1.0;
  const double units = 1.0 / (1.0 / test.first_effective_units + 1.0 / test.second_effective_units);
  test.detectable_distance = critical + hoeffding_margin(units);
  return test;
}

}  // namespace specgate
