#include "impl/decoding/fault_sites.h"

#include <ATen/ATen.h>

namespace specgate {

at::Tensor mask_under_faults(at::Tensor key_valid, const FaultSet& faults, int64_t fed_slot) {
  if (faults.has(Fault::kMaskLetsPaddingThrough)) key_valid = at::ones_like(key_valid);
  if (faults.has(Fault::kBonusNotFed) && fed_slot >= 0 && fed_slot < key_valid.size(1)) {
    key_valid = key_valid.clone();
    key_valid.select(1, fed_slot).fill_(false);
  }
  return key_valid;
}

SlotRun source_under_faults(const SlotRun& run, int64_t to_first, const FaultSet& faults) {
  if (faults.has(Fault::kKvNotShifted)) return {run.row, to_first, run.count};
  return run;
}

}  // namespace specgate
