#include "impl/common/short_number.h"

#include <cmath>
#include <cstdio>

namespace specgate {

std::string short_number(double value, int digits) {
  char text[32];
  if (std::fabs(value) >= std::pow(10.0, digits) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
  }
  return text;
}

}  // namespace specgate
