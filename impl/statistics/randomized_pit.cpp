#include "impl/statistics/randomized_pit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace specgate {
namespace {

// Rounding lets a normalised distribution sum past 1; float32 masses stay far within this.
constexpr double kMassRounding = 1e-5;

void check_unit_interval(double value, const char* name) {
  if (!(value >= 0.0 && value <= 1.0)) {
    throw std::invalid_argument(std::string(name) + " is " + std::to_string(value) + ", outside [0, 1]");
  }
}

// The PIT of `token` with `ahead(i)` saying whether token i comes before it in the order.
template <typename Ahead>
std::optional<double> pit_in_order(std::span<const double> probabilities, int64_t token, double uniform, Ahead ahead) {
  if (token < 0 || token >= static_cast<int64_t>(probabilities.size())) {
    throw std::invalid_argument("token " + std::to_string(token) + " is outside a distribution over " +
                                std::to_string(probabilities.size()) + " tokens");
  }
  double below = 0.0;
  double total = 0.0;
  for (size_t i = 0; i < probabilities.size(); ++i) {
    const double p = probabilities[i];
    if (!(p >= 0.0 && std::isfinite(p))) {
      throw std::invalid_argument("probability " + std::to_string(i) + " is " + std::to_string(p));
    }
    if (ahead(i)) below += p;
    total += p;
  }
  if (total == 0.0) throw std::invalid_argument("the distribution has no mass");
  return randomized_pit(below / total, probabilities[token] / total, uniform);
}

}  // namespace

std::optional<double> randomized_pit(double mass_below, double token_probability, double uniform) {
  check_unit_interval(mass_below, "the mass below the token");
  check_unit_interval(token_probability, "the token's probability");
  check_unit_interval(uniform, "the uniform draw");
  if (mass_below + token_probability > 1.0 + kMassRounding) {
    throw std::invalid_argument("the mass below the token and its probability sum to " +
                                std::to_string(mass_below + token_probability) + ", more than 1");
  }
  if (token_probability == 0.0) return std::nullopt;
  return std::min(1.0, mass_below + uniform * token_probability);
}

std::optional<double> randomized_pit(std::span<const double> probabilities, int64_t token, double uniform) {
  return pit_in_order(probabilities, token, uniform, [&](size_t i) { return static_cast<int64_t>(i) < token; });
}

std::optional<double> randomized_pit_most_likely_first(std::span<const double> probabilities, int64_t token,
                                                       double uniform) {
  const double own = 0 <= token && token < static_cast<int64_t>(probabilities.size()) ? probabilities[token] : 0.0;
  return pit_in_order(probabilities, token, uniform, [&](size_t i) {
    return probabilities[i] > own || (probabilities[i] == own && static_cast<int64_t>(i) < token);
  });
}

}  // namespace specgate
