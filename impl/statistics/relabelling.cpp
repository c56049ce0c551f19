#include "impl/statistics/relabelling.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace specgate {

double Relabellings::p_value(int64_t as_large) const {
  return exact ? static_cast<double>(as_large) / static_cast<double>(count)
               : static_cast<double>(1 + as_large) / static_cast<double>(1 + count);
}

Relabellings relabel(std::span<const char> is_first, std::span<const int64_t> strata, int64_t permutations,
                     uint64_t seed, const std::function<void(const std::vector<char>&)>& visit) {
  std::map<int64_t, std::vector<size_t>> members_of;
  for (size_t u = 0; u < strata.size(); ++u) members_of[strata[u]].push_back(u);
  Relabellings result;
  std::vector<std::vector<size_t>> movable;
  double log_count = 0.0;
  for (auto& [stratum, members] : members_of) {
    const auto firsts = std::ranges::count_if(members, [&](size_t u) { return is_first[u] != 0; });
    if (firsts == 0 || firsts == static_cast<int64_t>(members.size())) continue;
    result.exchangeable_units += static_cast<int64_t>(members.size());
    const auto size = static_cast<double>(members.size()), first_count = static_cast<double>(firsts);
    log_count += std::lgamma(size + 1.0) - std::lgamma(first_count + 1.0) - std::lgamma(size - first_count + 1.0);
    movable.push_back(std::move(members));
  }
  std::vector<char> labels(is_first.begin(), is_first.end());
  std::vector<std::vector<char>> stratum_labels;
  for (const std::vector<size_t>& members : movable) {
    std::vector<char> stratum;
    for (const size_t u : members) stratum.push_back(is_first[u] != 0);
    std::ranges::sort(stratum);
    stratum_labels.push_back(std::move(stratum));
  }
  const auto apply = [&] {
    for (size_t s = 0; s < movable.size(); ++s) {
      for (size_t i = 0; i < movable[s].size(); ++i) labels[movable[s][i]] = stratum_labels[s][i];
    }
    visit(labels);
    ++result.count;
  };
  result.exact = log_count <= std::log(static_cast<double>(permutations)) + 1e-9;
  if (result.exact) {
    for (;;) {
      apply();
      size_t s = 0;
      while (s < stratum_labels.size() && !std::ranges::next_permutation(stratum_labels[s]).found) ++s;
      if (s == stratum_labels.size()) break;
    }
    result.smallest_p_value = 1.0 / static_cast<double>(result.count);
  } else {
    std::mt19937_64 random(seed);
    for (int64_t p = 0; p < permutations; ++p) {
      for (std::vector<char>& stratum : stratum_labels) std::ranges::shuffle(stratum, random);
      apply();
    }
    result.smallest_p_value = 1.0 / static_cast<double>(result.count + 1);
  }
  return result;
}

}  // namespace specgate
