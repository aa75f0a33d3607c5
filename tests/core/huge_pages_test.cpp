#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/tensor.h"

namespace orion {
namespace {

bool aligned(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

TEST(HugePages, LargeAllocationsSitOnHugePageBoundaries) {
  void* big = allocate_large(kHugePageBytes + 1, 64);
  EXPECT_TRUE(aligned(big, kHugePageBytes));
  std::memset(big, 7, kHugePageBytes + 1);  // every byte asked for is usable
  free_large(big);
  void* small = allocate_large(100, 64);
  EXPECT_TRUE(aligned(small, 64));
  free_large(small);
  // Tensors get the same placement, and stay zero-filled.
  Tensor t(DType::f32, {1024, 1024});
  EXPECT_TRUE(aligned(t.raw(), kHugePageBytes));
  EXPECT_EQ(t.span<float>()[1024 * 1024 - 1], 0.0f);
}

}  // namespace
}  // namespace orion
