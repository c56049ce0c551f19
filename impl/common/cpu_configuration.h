#pragma once

#include <cstdint>
#include <string>

namespace specgate {

// How a process computes on the CPU, as configure_cpu left it.
struct CpuConfiguration {
  int64_t intra_op_threads = 0;  // libtorch's intra-op (OpenMP) threads, which MKL's products follow
  std::string math_library;      // the library behind libtorch's matrix products ("MKL")
};

// Computes on one libtorch intra-op thread. The operators of decoding small models are too small
// to split across threads; a second pool beside the computing thread busy-waits for work it is
// rarely handed, taking a core's worth of time from the rest of the machine. Set by the program
// so that results do not depend on OMP_NUM_THREADS or MKL_NUM_THREADS in the caller's
// environment; a command's --threads asks for more.
CpuConfiguration configure_cpu();

// The current configuration, read back from libtorch.
CpuConfiguration current_cpu_configuration();

}  // namespace specgate
