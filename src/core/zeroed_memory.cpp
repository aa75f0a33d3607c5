#include "core/zeroed_memory.h"

#include <cstdlib>
#include <new>

#include <sys/mman.h>

namespace orion {

namespace {
// From here a block is mapped: below, a page or more of calloc's own bookkeeping would not pay.
constexpr std::size_t kMapBytes = std::size_t{256} << 10;
}  // namespace

void* allocate_zeroed(std::size_t bytes) {
  if (bytes < kMapBytes) {
    void* p = std::calloc(bytes == 0 ? 1 : bytes, 1);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void free_zeroed(void* p, std::size_t bytes) {
  if (!p) return;
  if (bytes < kMapBytes) std::free(p);
  else ::munmap(p, bytes);
}

}  // namespace orion
