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
// Throws InputError when this libtorch cannot run a model of `dtype` on `device` (float16
// matrix products on CPU arrived with libtorch 2).
void check_dtype_runs_on(c10::ScalarType dtype, c10::Device device);

}  // namespace specgate
