#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace specgate {

// Where the law of the randomised PIT is read: the points (j + 0.5) / kPitShiftPoints.
inline constexpr int64_t kPitShiftPoints = 1024;

// How far a draw from `engine` moves the randomised PIT against `reference` off Uniform(0, 1), at
// each position and point u: G(u) - u, G the PIT's CDF when the token is drawn from `engine`
// given that it lies in `reference`'s support (the draws the PIT takes in). The PIT orders tokens
// as the sampling check does, most likely under `reference` first, ties by id. Zero where
// `engine` gives the support no mass. reference, engine: shaped distributions [n, V] (float64)
// -> [n, kPitShiftPoints].
at::Tensor pit_law_shift(const at::Tensor& reference, const at::Tensor& engine);

}  // namespace specgate
