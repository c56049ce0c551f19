#pragma once

#include <chrono>

#include <c10/core/Device.h>

namespace specgate {

// Measures the wall-clock time of consecutive phases, adding each to a counter. With
// `synchronise`, on a device that runs kernels asynchronously (CUDA), it waits for that
// device, and only that one, at every phase boundary so that kernels are charged to the phase
// that launched them; otherwise a phase is charged the time the host spent in it.
class PhaseTimer {
 public:
  PhaseTimer(c10::Device device, bool synchronise);
  // Whether timing phases with `synchronise` on `device` waits for it, and so slows the run.
  static bool waits_for(c10::Device device) { return device.is_cuda(); }
  // Ends the running phase (charging it to `counter`) and starts the next.
  void charge(double& counter);

 private:
  c10::Device device_;
  bool synchronise_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specgate
