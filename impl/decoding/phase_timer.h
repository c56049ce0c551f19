#pragma once

#include <chrono>

#include <c10/core/Device.h>

namespace specgate {

// Measures the wall-clock time of consecutive phases, adding each to a counter. On CUDA,
// with `synchronise`, waits for the device at every phase boundary so that asynchronous
// kernels are charged to the phase that launched them.
class PhaseTimer {
 public:
  PhaseTimer(c10::Device device, bool synchronise);
  // Ends the running phase (charging it to `counter`) and starts the next.
  void charge(double& counter);

 private:
  bool synchronise_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specgate
