#pragma once

#include <cstdint>
#include <vector>

#include "impl/decoding/batch_tensors.h"

namespace specgate {

class KVCache;

// The re-layout of published batch speculative decoders, kept as a baseline for `conformance
// bench`: per layer and per row, a freshly allocated block of zeros for the new padding is
// concatenated with the row's kept entries, the rows are stacked into a new tensor, and that
// is copied back into the cache. Same result as KVCache::shift_rows on slot_runs(moves), with
// allocations, concatenations and a second copy on top.
void naive_realign(KVCache& cache, const std::vector<RowMove>& moves, int64_t new_length);

}  // namespace specgate
