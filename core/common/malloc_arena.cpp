#include "core/common/malloc_arena.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace parascope {

void shareMallocArenas() {
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, 1);  // fails only for a value below 1
#endif
}

}  // namespace parascope
