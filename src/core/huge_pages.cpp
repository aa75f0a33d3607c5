#include "core/huge_pages.h"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace orion {

void* allocate_large(std::size_t bytes, std::size_t alignment) {
  const bool huge = bytes >= kHugePageBytes;
  std::size_t padded = (bytes + alignment - 1) / alignment * alignment;
  if (padded == 0) padded = alignment;
  // Only the start moves to a huge-page boundary; the size is not rounded up to one, so that a
  // zero-filling caller does not make a partial last huge page resident (the tail stays on
  // small pages: the kernel backs only whole advised 2 MiB ranges with huge pages).
  // posix_memalign, not aligned_alloc: C requires aligned_alloc's size to be a multiple of the
  // alignment (AddressSanitizer reports it, make test-sanitize); POSIX asks no such thing.
  void* p = nullptr;
  if (::posix_memalign(&p, huge ? kHugePageBytes : alignment, padded) != 0) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge) (void)madvise(p, padded, MADV_HUGEPAGE);
#endif
  return p;
}

void free_large(void* p) { std::free(p); }

}  // namespace orion
