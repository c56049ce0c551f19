#pragma once

#include <cstdint>
#include <optional>

namespace specgate {

// The CPU thread pools a process computes with, as configure_cpu_threads left them.
struct CpuThreads {
  int64_t intra_op = 0;              // libtorch's intra-op (OpenMP) threads
  std::optional<int64_t> blas;       // OpenBLAS's own pool; none where no OpenBLAS is loaded
};

// Computes on one thread: one libtorch intra-op thread, and one OpenBLAS thread (Debian's
// libtorch calls OpenBLAS for matrix products). The operators of decoding small models are
// too small to split across threads; a second pool beside the computing thread busy-waits for
// work it is rarely handed, taking a core's worth of user and system time from the rest of
// the machine. Set by the program so that results do not depend on OPENBLAS_NUM_THREADS or
// OMP_NUM_THREADS in the caller's environment.
CpuThreads configure_cpu_threads();

// The current configuration, read back from libtorch and OpenBLAS.
CpuThreads current_cpu_threads();

}  // namespace specgate
