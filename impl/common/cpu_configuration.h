#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace specgate {

// How a process computes on the CPU, as configure_cpu left it.
struct CpuConfiguration {
  int64_t intra_op_threads = 0;           // libtorch's intra-op (OpenMP) threads
  std::optional<int64_t> blas_threads;    // OpenBLAS's own pool; none where no OpenBLAS is loaded
  std::optional<std::string> blas_core;   // the CPU OpenBLAS runs the kernels of ("SkylakeX")
  std::optional<std::string> blas_core_detected;  // what OpenBLAS took the CPU for, where configure_cpu overrode it
};

// Computes on one thread: one libtorch intra-op thread, and one OpenBLAS thread (Debian's
// libtorch calls OpenBLAS for matrix products). The operators of decoding small models are
// too small to split across threads; a second pool beside the computing thread busy-waits for
// work it is rarely handed, taking a core's worth of user and system time from the rest of
// the machine. Set by the program so that results do not depend on OPENBLAS_NUM_THREADS or
// OMP_NUM_THREADS in the caller's environment.
//
// Also gives OpenBLAS the kernels of the CPU's instruction set where its detection, which goes
// by CPU model, fell back to Prescott's (SSE3) on a model it does not know: OpenBLAS 0.3.21
// does so on Emerald Rapids, and its products of decoding shapes then run 2-5x slower. An
// OPENBLAS_CORETYPE in the environment is left to rule.
CpuConfiguration configure_cpu();

// The current configuration, read back from libtorch and OpenBLAS.
CpuConfiguration current_cpu_configuration();

}  // namespace specgate
