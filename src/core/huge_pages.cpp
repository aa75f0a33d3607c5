#include "core/huge_pages.h"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace orion {

void* allocate_large(std::size_t bytes, std::size_t alignment) {
  const bool huge = bytes >= kHugePageBytes;
  if (huge) alignment = kHugePageBytes;
  const std::size_t padded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, padded == 0 ? alignment : padded);
  if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge) (void)madvise(p, padded, MADV_HUGEPAGE);
#endif
  return p;
}

void free_large(void* p) { std::free(p); }

}  // namespace orion
