#pragma once

#include <cstdint>

namespace specgate::cli {

// The process's peak resident memory (Linux VmHWM), and its reset to the current resident
// size, so that the peak of one stretch of work can be read. 0 where the system does not say.
int64_t peak_memory_bytes();
void reset_peak_memory();

}  // namespace specgate::cli
