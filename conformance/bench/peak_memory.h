#pragma once

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

namespace specgate::cli {

// The peak memory of a stretch of work on a device: on CUDA the caching allocator's peak of
// allocated bytes on that device, on CPU the process's peak resident memory (Linux VmHWM).
struct PeakMemory {
  int64_t bytes = 0;   // 0 where the system does not say
  std::string source;  // "cuda-caching-allocator" or "vmhwm"
};

// Starts a stretch: resets the peak to the current use.
void reset_peak_memory(c10::Device device);
PeakMemory peak_memory(c10::Device device);

}  // namespace specgate::cli
