#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace specgate {

// The decoder's ways across the host-device boundary. An upload from pinned memory does not
// wait for the device; a download does, and is what the dispatch counter counts as a
// synchronisation (on a CPU too, where it is a copy).

// A host tensor on `device`: itself on the host, else copied without blocking the host.
at::Tensor upload(const at::Tensor& host, c10::Device device);
// A host copy of `tensor`: waits for the device to produce it.
at::Tensor download(const at::Tensor& tensor);

}  // namespace specgate
