#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "impl/decoding/faults.h"
#include "impl/model/kv_cache.h"

namespace specgate {

// The faults shared by several sites of a round: the mask of a pass (target or draft) and the
// re-layout of the target cache (EQSPEC or EXSPEC). Each returns its input unless its fault is on.

// The key mask: every slot valid (kMaskLetsPaddingThrough); the pending token's `fed_slot`
// hidden from every row (kBonusNotFed), when given.
at::Tensor mask_under_faults(at::Tensor key_valid, const FaultSet& faults, int64_t fed_slot = -1);

// Where a target cache run bound for slot `to_first` is read from: the run itself, or
// (kKvNotShifted) the slots it should land in, as if it had never moved.
SlotRun source_under_faults(const SlotRun& run, int64_t to_first, const FaultSet& faults);

}  // namespace specgate
