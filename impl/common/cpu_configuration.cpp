#include "impl/common/cpu_threads.h"

#include <dlfcn.h>

#include <ATen/Parallel.h>

namespace specgate {
namespace {

// OpenBLAS's thread controls, found in the process rather than linked: libtorch loads
// OpenBLAS through the system BLAS, which may as well be another implementation.
template <typename Function>
Function* openblas_symbol(const char* name) {
  return reinterpret_cast<Function*>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

CpuThreads configure_cpu_threads() {
  if (auto* set_blas_threads = openblas_symbol<void(int)>("openblas_set_num_threads")) set_blas_threads(1);
  at::set_num_threads(1);
  return current_cpu_threads();
}

CpuThreads current_cpu_threads() {
  CpuThreads threads{.intra_op = at::get_num_threads()};
  if (auto* get_blas_threads = openblas_symbol<int()>("openblas_get_num_threads")) threads.blas = get_blas_threads();
  return threads;
}

}  // namespace specgate
