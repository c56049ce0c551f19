#pragma once

#include <cstdint>
#include <memory>

#include <ATen/ATen.h>

namespace specgate {

// Host memory for tensors that live as long as a model, in one anonymous mapping that the
// kernel is asked to back with 2 MiB pages (madvise MADV_HUGEPAGE; Linux's default for
// transparent huge pages is to give them only where asked). A decode step reads every weight
// once: in 4 KiB pages that is a TLB miss every 4 KiB, and on a Zen 4 core a sum over the real
// model's weights took 25 ms in 4 KiB pages and 18 ms in 2 MiB ones. Where the kernel gives no
// huge pages, the memory is ordinary.
class HugePageArena {
 public:
  // Room for `bytes` (tensors' bytes, each rounded up to kAlignment).
  explicit HugePageArena(int64_t bytes);

  // An uninitialised contiguous tensor carved from the arena; the mapping lasts while any
  // tensor carved from it does. Throws when the arena is full.
  at::Tensor allocate(at::IntArrayRef sizes, at::ScalarType dtype);

  // The bytes `allocate` takes for a tensor of `bytes`.
  static int64_t footprint(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

 private:
  static constexpr int64_t kAlignment = 64;
  std::shared_ptr<char> region_;
  int64_t capacity_, used_ = 0;
};

}  // namespace specgate
