#include "impl/common/allocator_tuning.h"

#include <malloc.h>

namespace specgate {

void keep_freed_memory_for_reuse() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // the largest glibc accepts on 64-bit systems
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace specgate
