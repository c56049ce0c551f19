#pragma once

#include <cstdint>
#include <vector>

#include "impl/model/kv_cache.h"

namespace specgate {

// The re-layout of published batch speculative decoders, kept as a baseline for `conformance
// bench`: per layer and per row, a freshly allocated block of zeros for the new padding is
// concatenated with the row's kept entries, the rows are stacked into a new tensor, and that
// is copied back into the cache. Same result as KVCache::gather(cache, runs, to_first) after
// reshape(runs.size(), length), with allocations, concatenations and a second copy on top.
void naive_realign(KVCache& cache, const std::vector<SlotRun>& runs, const std::vector<int64_t>& to_first,
                   int64_t length);

}  // namespace specgate
