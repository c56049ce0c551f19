#include "impl/common/cpu_configuration.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdlib>

#include <ATen/Parallel.h>

namespace specgate {
namespace {

// OpenBLAS's controls, found in the process rather than linked: libtorch loads OpenBLAS
// through the system BLAS, which may as well be another implementation.
template <typename Function>
Function* openblas_symbol(const char* name) {
  return reinterpret_cast<Function*>(dlsym(RTLD_DEFAULT, name));
}

std::optional<std::string> openblas_core() {
  auto* corename = openblas_symbol<char*()>("openblas_get_corename");
  if (corename == nullptr) return std::nullopt;
  return std::string(corename());
}

// The OPENBLAS_CORETYPE of the widest vector instructions this CPU has; none off x86, where
// OpenBLAS's Prescott is no fallback.
const char* core_of_instruction_set() {
#if !defined(__x86_64__)
  return nullptr;
#else
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  return nullptr;
#endif
}

// What OpenBLAS took the CPU for, where configure_cpu overrode its choice; a later call finds
// the kernels it chose and overrides nothing.
std::optional<std::string> overridden_core;

// Re-runs OpenBLAS's own kernel choice (a dynamic-architecture build's) under an
// OPENBLAS_CORETYPE, before any product has run; the environment is left as it was.
// Returns the core detected before, where it changed.
std::optional<std::string> override_prescott_fallback() {
  const std::optional<std::string> detected = openblas_core();
  auto* quit = openblas_symbol<void()>("gotoblas_dynamic_quit");
  auto* init = openblas_symbol<void()>("gotoblas_dynamic_init");
  const char* wanted = core_of_instruction_set();
  if (!detected || strcasecmp(detected->c_str(), "Prescott") != 0 || quit == nullptr || init == nullptr ||
      wanted == nullptr || std::getenv("OPENBLAS_CORETYPE") != nullptr)
    return std::nullopt;
  setenv("OPENBLAS_CORETYPE", wanted, 1);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  return detected;
}

}  // namespace

CpuConfiguration configure_cpu() {
  if (std::optional<std::string> detected = override_prescott_fallback()) overridden_core = std::move(detected);
  if (auto* set_blas_threads = openblas_symbol<void(int)>("openblas_set_num_threads")) set_blas_threads(1);
  at::set_num_threads(1);
  return current_cpu_configuration();
}

CpuConfiguration current_cpu_configuration() {
  CpuConfiguration configuration{
      .intra_op_threads = at::get_num_threads(), .blas_core = openblas_core(), .blas_core_detected = overridden_core};
  if (auto* get_blas_threads = openblas_symbol<int()>("openblas_get_num_threads"))
    configuration.blas_threads = get_blas_threads();
  return configuration;
}

}  // namespace specgate
