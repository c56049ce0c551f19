#pragma once

#include <string>
#include <string_view>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace specgate {

// The names Hugging Face configs and our flags use: float64, float32, bfloat16, float16.
std::string dtype_name(c10::ScalarType dtype);
// Throws InputError (naming `what`, e.g. "--dtype") for any other name.
c10::ScalarType dtype_from_name(std::string_view name, std::string_view what);

}  // namespace specgate
