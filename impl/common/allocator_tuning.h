#pragma once

namespace specgate {

// Tells the C allocator to keep freed memory for reuse instead of returning large blocks to
// the system at once. Decoding frees and re-allocates the same large temporaries (attention
// scores, MLP activations) every step; returned to the system, each comes back as fresh
// pages that fault one by one, which costs more than the arithmetic on small CPU models.
void keep_freed_memory_for_reuse();

}  // namespace specgate
