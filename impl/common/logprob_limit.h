#pragma once

namespace specgate {

// float32 rounding puts a certain token's log-probability a few 1e-7 above 0, no more: a value
// further above 0 is no log-probability.
inline constexpr double kMostLogprobAboveZero = 1e-3;

}  // namespace specgate
