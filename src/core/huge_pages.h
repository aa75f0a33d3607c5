#pragma once
// Large buffers on transparent huge pages. Decoding streams hundreds of megabytes of weights per
// token; on 4 KiB pages that is a TLB miss (a page walk) every 4 KiB of every stream. Linux's
// default THP mode on many distributions is "madvise": only regions that ask get 2 MiB pages.
#include <cstddef>
#include <memory>

namespace orion {

// Allocations at least this large are placed on 2 MiB boundaries and advised as huge pages.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// Allocates `bytes` (rounded up to `alignment`, which must be a power of two) aligned to
// `alignment`, or to kHugePageBytes when bytes >= kHugePageBytes, in which case the region is
// advised as huge pages where the OS supports it (a hint: failure is ignored). Not zeroed.
// The size is not rounded up to whole huge pages.
// Throws std::bad_alloc. Free with free_large().
void* allocate_large(std::size_t bytes, std::size_t alignment);
void free_large(void* p);

struct LargeFree {
  void operator()(void* p) const { free_large(p); }
};

// An uninitialised array from allocate_large (64-byte aligned at least): for large scratch such
// as a KV cache, where zero-filling would make every page resident before it is used.
template <class T>
using LargeArray = std::unique_ptr<T[], LargeFree>;

template <class T>
LargeArray<T> make_large_array(std::size_t n) {
  return LargeArray<T>(static_cast<T*>(allocate_large(n * sizeof(T), 64)));
}

}  // namespace orion
