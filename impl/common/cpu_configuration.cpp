#include "impl/common/cpu_configuration.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

namespace specgate {

CpuConfiguration configure_cpu() {
  at::set_num_threads(1);
  return current_cpu_configuration();
}

CpuConfiguration current_cpu_configuration() {
  return CpuConfiguration{.intra_op_threads = at::get_num_threads(),
                          .math_library = at::hasMKL() ? "MKL" : at::hasLAPACK() ? "LAPACK" : "ATen"};
}

}  // namespace specgate
