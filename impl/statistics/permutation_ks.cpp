#include "impl/statistics/permutation_ks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "impl/statistics/uniformity.h"

namespace specgate {
namespace {

struct Pooled {
  double value;
  int32_t unit;
};

// D between the values of the units marked first and the rest, over the pooled values in
// ascending order.
double pooled_distance(std::span<const Pooled> sorted, const std::vector<char>& is_first,
                       const std::vector<int64_t>& lengths) {
  int64_t n = 0, m = 0;
  for (size_t u = 0; u < lengths.size(); ++u) (is_first[u] ? n : m) += lengths[u];
  if (n == 0 || m == 0) return 1.0;
  const double per_first = 1.0 / static_cast<double>(n), per_second = 1.0 / static_cast<double>(m);
  double difference = 0.0, distance = 0.0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    difference += is_first[sorted[i].unit] ? per_first : -per_second;
    if (i + 1 == sorted.size() || sorted[i + 1].value != sorted[i].value)
      distance = std::max(distance, std::abs(difference));
  }
  return distance;
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
  test.permutations = permutations;
  test.first_units = static_cast<int64_t>(first.size());
  test.second_units = static_cast<int64_t>(second.size());

  std::vector<Pooled> pooled;
  std::vector<int64_t> lengths;
  std::vector<char> is_first;
  std::map<int64_t, std::vector<int32_t>> strata;
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
      (side ? test.first_values : test.second_values) += static_cast<int64_t>(unit.values.size());
      strata[unit.stratum].push_back(index);
    }
  }
  if (test.first_values == 0 || test.second_values == 0)
    throw std::invalid_argument("a two-sample test needs values on both sides");
  std::ranges::sort(pooled, {}, &Pooled::value);
  test.distance = pooled_distance(pooled, is_first, lengths);

  // Only strata with units on both sides can exchange them.
  std::vector<std::vector<int32_t>> movable;
  for (auto& [stratum, members] : strata) {
    const auto firsts = std::ranges::count_if(members, [&](int32_t u) { return is_first[u] != 0; });
    if (firsts == 0 || firsts == static_cast<int64_t>(members.size())) continue;
    test.exchangeable_units += static_cast<int64_t>(members.size());
    movable.push_back(std::move(members));
  }
  std::mt19937_64 random(seed);
  std::vector<char> relabelled = is_first;
  std::vector<double> distances;
  distances.reserve(permutations);
  int64_t as_large = 0;
  for (int64_t p = 0; p < permutations; ++p) {
    for (const std::vector<int32_t>& members : movable) {
      std::vector<char> labels;
      for (const int32_t u : members) labels.push_back(is_first[u]);
      std::ranges::shuffle(labels, random);
      for (size_t i = 0; i < members.size(); ++i) relabelled[members[i]] = labels[i];
    }
    const double distance = pooled_distance(pooled, relabelled, lengths);
    distances.push_back(distance);
    // Equal up to rounding in the sums counts as large: the p-value stays valid.
    as_large += distance >= test.distance - 1e-12;
  }
  test.p_value = static_cast<double>(1 + as_large) / static_cast<double>(1 + permutations);

  test.first_effective_units = effective_units(first);
  test.second_effective_units = effective_units(second);
  std::ranges::sort(distances);
  const auto rank = static_cast<size_t>(std::ceil((1.0 - level) * static_cast<double>(permutations + 1))) - 1;
  const double critical = rank < distances.size() ? distances[rank] : 1.0;
  const double units = 1.0 / (1.0 / test.first_effective_units + 1.0 / test.second_effective_units);
  test.detectable_distance = critical + hoeffding_margin(units);
  return test;
}

}  // namespace specgate
