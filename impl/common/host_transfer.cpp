#include "impl/common/host_transfer.h"

#include <ATen/ATen.h>

namespace specgate {

at::Tensor upload(const at::Tensor& host, c10::Device device) {
  if (host.device() == device) return host;
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

at::Tensor download(const at::Tensor& tensor) {
  return tensor.to(at::TensorOptions().device(at::kCPU), /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace specgate
