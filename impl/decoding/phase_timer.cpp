#include "impl/decoding/phase_timer.h"

#include <torch/cuda.h>

namespace specgate {

PhaseTimer::PhaseTimer(c10::Device device, bool synchronise)
    : device_(device), synchronise_(synchronise && waits_for(device)), start_(std::chrono::steady_clock::now()) {}

void PhaseTimer::charge(double& counter) {
  if (synchronise_) torch::cuda::synchronize(device_.index());  // -1: the current device, where "cuda" places tensors
  const auto now = std::chrono::steady_clock::now();
  counter += std::chrono::duration<double>(now - start_).count();
  start_ = now;
}

}  // namespace specgate
