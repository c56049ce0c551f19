#pragma once

namespace specgate {

// The widest vector instructions of libtorch's own CPU kernels on this machine: the best the CPU
// runs, lowered by ATEN_CPU_CAPABILITY. The model's own kernels use the same, so that a test run
// under one kernel family covers theirs too.
enum class VectorIsa { kNone, kAvx2, kAvx512 };
VectorIsa vector_isa();

}  // namespace specgate
