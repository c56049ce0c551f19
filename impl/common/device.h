#pragma once

#include <string_view>

#include <c10/core/Device.h>

namespace specgate {

// cpu, cuda or cuda:N. Throws InputError (naming `what`, e.g. "--device") for any other name
// and for CUDA when this build has no CUDA device.
c10::Device device_from_name(std::string_view name, std::string_view what);

}  // namespace specgate
