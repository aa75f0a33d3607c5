#pragma once
// Zero-filled memory whose pages cost nothing until they are written: a large block is mapped
// from the kernel's zero pages (mmap), a small one comes from calloc. For buffers sized for the
// worst case and mostly never touched, such as an ANE surface padded to its kernel's largest
// input (ANE010): calloc alone would memset them whenever it reuses heap memory.
#include <cstddef>

namespace orion {

// `bytes` zero bytes (at least one). Throws std::bad_alloc.
void* allocate_zeroed(std::size_t bytes);
// Frees what allocate_zeroed(bytes) returned; null is ignored.
void free_zeroed(void* p, std::size_t bytes);

}  // namespace orion
