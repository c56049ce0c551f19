#include "conformance/bench/peak_memory.h"

#include <fstream>

#if SPECGATE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace specgate::cli {
namespace {

int64_t vmhwm_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      int64_t kibibytes = 0;
      status >> kibibytes;
      return kibibytes * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

#if SPECGATE_WITH_CUDA
c10::DeviceIndex cuda_index(c10::Device device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}
#endif

}  // namespace

void reset_peak_memory(c10::Device device) {
#if SPECGATE_WITH_CUDA
  if (device.is_cuda()) return c10::cuda::CUDACachingAllocator::resetPeakStats(cuda_index(device));
#endif
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

PeakMemory peak_memory(c10::Device device) {
#if SPECGATE_WITH_CUDA
  if (device.is_cuda()) {
    // allocated_bytes[0]: the aggregate over the allocator's small and large pools.
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_index(device));
    return {stats.allocated_bytes[0].peak, "cuda-caching-allocator"};
  }
#endif
  return {vmhwm_bytes(), "vmhwm"};
}

}  // namespace specgate::cli
