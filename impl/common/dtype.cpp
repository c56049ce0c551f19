#include "impl/common/dtype.h"

#include <array>
#include <utility>

#include <torch/version.h>

#include "impl/common/error.h"

namespace specgate {
namespace {

constexpr std::array<std::pair<std::string_view, c10::ScalarType>, 4> kDtypes = {{
    {"float64", c10::ScalarType::Double},
    {"float32", c10::ScalarType::Float},
    {"bfloat16", c10::ScalarType::BFloat16},
    {"float16", c10::ScalarType::Half},
}};

}  // namespace

std::string dtype_name(c10::ScalarType dtype) {
  for (const auto& [name, type] : kDtypes) {
    if (type == dtype) return std::string(name);
  }
  return c10::toString(dtype);
}

c10::ScalarType dtype_from_name(std::string_view name, std::string_view what) {
  for (const auto& [known, type] : kDtypes) {
    if (known == name) return type;
  }
  throw InputError(std::string(what) + ": unknown dtype '" + std::string(name) +
                   "' (expected float64, float32, bfloat16 or float16)");
}

}  // namespace specgate
