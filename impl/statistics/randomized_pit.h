#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace specgate {

// The randomised probability integral transform of a discrete draw. With F(t-) the mass strictly
// below token t in a fixed order of the support, p(t) its own mass and V ~ Uniform(0, 1) drawn
// independently, u = F(t-) + V p(t) is Uniform(0, 1) exactly when t was drawn from p. Empty when
// p(t) = 0: a token outside the support is evidence by itself, not a PIT value.

// Throws std::invalid_argument for an argument outside [0, 1] or NaN, or masses summing past 1
// by more than rounding.
std::optional<double> randomized_pit(double mass_below, double token_probability, double uniform);

// The same over a distribution in index order, normalised by its sum so that rounding in it never
// takes u past 1. Throws std::invalid_argument for a negative, infinite or NaN entry, an all-zero
// distribution, a token outside it, or a uniform outside [0, 1].
std::optional<double> randomized_pit(std::span<const double> probabilities, int64_t token, double uniform);

// The same with the tokens ordered from the most likely to the least, ties by index: the order
// `conformance sampling` takes, in which a draw that favours likely tokens gives small values
// in every context alike. Throws as the overload above does.
std::optional<double> randomized_pit_most_likely_first(std::span<const double> probabilities, int64_t token,
                                                       double uniform);

}  // namespace specgate
