#pragma once

#include <cstdint>

namespace specgate {

// What a stretch of code asked of ATen on this thread: the operators it dispatched (not those
// dispatched inside them), and the synchronisations with the device: scalar reads (item),
// copies to the host from a device, and the ops whose output size the host must learn
// (nonzero, masked_select, unique). On a host, where nothing waits, the decoder's downloads
// (host_transfer.h) count where they would wait, so the figures hold for any device.
struct DispatchCounts {
  int64_t operators = 0;
  int64_t host_syncs = 0;
};

// Counts while alive, on the thread that made it, through an ATen RecordFunction observer.
// Counters nest: each counts everything dispatched during its life.
class DispatchCounter {
 public:
  DispatchCounter();
  ~DispatchCounter();
  DispatchCounter(const DispatchCounter&) = delete;
  DispatchCounter& operator=(const DispatchCounter&) = delete;

  const DispatchCounts& counts() const { return counts_; }

 private:
  friend struct DispatchObserver;
  DispatchCounts counts_;
  DispatchCounter* outer_;
  uint64_t handle_ = 0;
};

}  // namespace specgate
