#pragma once

#include <string>

namespace specgate {

// A number with up to `digits` significant digits; a whole number with more digits in full
// (1020 tokens/s rather than 1.02e+03).
std::string short_number(double value, int digits = 4);

}  // namespace specgate
