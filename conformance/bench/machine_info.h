#pragma once

#include <nlohmann/json_fwd.hpp>

#include <c10/core/Device.h>

namespace specgate::cli {

// What a benchmark ran on: processor, cores and threads, memory, system, libtorch, device.
nlohmann::ordered_json machine_info(c10::Device device);

}  // namespace specgate::cli
