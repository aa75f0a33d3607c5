#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"

namespace orion {
namespace {

// 0, 1, 2, ... as an f32 tensor: element values equal their row-major index.
Tensor iota(const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::from_floats(shape, v);
}

TEST(Tensor, ShapeHelpers) {
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({5, 0}), 0);
  EXPECT_EQ(shape_str({2, 3}), "[2, 3]");
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Shape{12, 4, 1}));
}

TEST(Tensor, NewTensorIsZeroedAlignedAndContiguous) {
  Tensor t(DType::f16, {3, 5});
  EXPECT_EQ(t.nbytes(), 30u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.raw()) % kTensorAlignment, 0u);
  for (std::uint16_t v : t.span<std::uint16_t>()) EXPECT_EQ(v, 0);
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_EQ(t.dim(0), 3);
  EXPECT_THROW(t.dim(2), Error);
  EXPECT_THROW(t.dim(-3), Error);
  EXPECT_THROW(Tensor(DType::f32, {2, -1}), Error);
}

TEST(Tensor, RejectsShapesWhoseSizeOverflows) {
  const std::int64_t big = std::int64_t{1} << 40;
  EXPECT_THROW(Tensor(DType::f32, {big, big}), Error);
  auto buffer = Buffer::allocate(64);
  // 2^62 * 2^2 elements of 4 bytes wraps to 0 in 64 bits: must not pass the bounds check.
  EXPECT_THROW(Tensor::view_of(DType::f32, {std::int64_t{1} << 62, 4}, buffer, 0), Error);
}

TEST(Tensor, TypedAccessChecksTheDType) {
  Tensor t = iota({2, 2});
  EXPECT_EQ(t.data<float>()[3], 3.0f);
  EXPECT_THROW(t.data<std::int32_t>(), Error);
  EXPECT_THROW(Tensor(DType::bf16, {2}).data<float>(), Error);
  EXPECT_THROW(Tensor().data<float>(), Error);
}

TEST(Tensor, ReshapeSharesStorageAndInfersMinusOne) {
  Tensor t = iota({2, 3});
  Tensor r = t.reshape({-1, 2});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(r.strides(), (Shape{2, 1}));
  EXPECT_EQ(r.raw(), t.raw());
  r.data<float>()[5] = 50.0f;
  EXPECT_EQ(t.to_floats(), (std::vector<float>{0, 1, 2, 3, 4, 50}));
  EXPECT_EQ(t.reshape({6}).shape(), (Shape{6}));
  EXPECT_EQ(t.reshape({1, -1, 1}).shape(), (Shape{1, 6, 1}));
}

TEST(Tensor, ReshapeErrors) {
  Tensor t = iota({2, 3});
  EXPECT_THROW(t.reshape({4, -1}), Error);
  EXPECT_THROW(t.reshape({-1, -1}), Error);
  EXPECT_THROW(t.reshape({7}), Error);
  EXPECT_THROW(t.reshape({-2, -3}), Error);
  EXPECT_THROW(Tensor(DType::f32, {0, 3}).reshape({0, -1}), Error);
  const int perm[] = {1, 0};
  EXPECT_THROW(t.permute(perm).reshape({6}), Error);  // not contiguous
}

TEST(Tensor, PermuteMovesAxes) {
  Tensor t = iota({2, 3, 4});
  const int perm[] = {2, 0, 1};
  Tensor p = t.permute(perm);
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_EQ(p.raw(), t.raw());
  // p[a][b][c] = t[b][c][a] = 12b + 4c + a.
  std::vector<float> expected;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) expected.push_back(static_cast<float>(12 * b + 4 * c + a));
  EXPECT_EQ(p.to_floats(), expected);
  EXPECT_THROW(p.span<float>(), Error);
}

TEST(Tensor, PermuteErrors) {
  Tensor t = iota({2, 3});
  const int too_short[] = {0};
  const int repeated[] = {0, 0};
  const int out_of_range[] = {0, 2};
  const int negative[] = {-1, 0};
  EXPECT_THROW(t.permute(too_short), Error);
  EXPECT_THROW(t.permute(repeated), Error);
  EXPECT_THROW(t.permute(out_of_range), Error);
  EXPECT_THROW(t.permute(negative), Error);
}

TEST(Tensor, SliceSelectsARange) {
  Tensor t = iota({3, 4});
  Tensor s = t.slice(1, 1, 3);
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.to_floats(), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(t.slice(-1, 3, 4).to_floats(), (std::vector<float>{3, 7, 11}));
  Tensor rows = t.slice(0, 1, 3);  // whole rows: still contiguous
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_EQ(rows.span<float>()[0], 4.0f);
  EXPECT_EQ(t.slice(0, 2, 2).numel(), 0);
  // A slice of a slice.
  EXPECT_EQ(s.slice(0, 1, 3).slice(1, 1, 2).to_floats(), (std::vector<float>{6, 10}));
}

TEST(Tensor, SliceErrors) {
  Tensor t = iota({3, 4});
  EXPECT_THROW(t.slice(1, -1, 2), Error);
  EXPECT_THROW(t.slice(1, 3, 2), Error);
  EXPECT_THROW(t.slice(1, 0, 5), Error);
  EXPECT_THROW(t.slice(2, 0, 1), Error);
  EXPECT_THROW(t.slice(-3, 0, 1), Error);
}

TEST(Tensor, ContiguousCopiesOnlyWhenNeeded) {
  Tensor t = iota({2, 3});
  EXPECT_EQ(t.contiguous().raw(), t.raw());
  const int perm[] = {1, 0};
  Tensor p = t.permute(perm);
  Tensor c = p.contiguous();
  EXPECT_NE(c.raw(), t.raw());
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(std::vector<float>(c.span<float>().begin(), c.span<float>().end()),
            (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Tensor, CloneOfAStridedViewIsIndependent) {
  Tensor t = iota({4, 4});
  const int perm[] = {1, 0};
  Tensor view = t.slice(0, 1, 3).permute(perm).slice(0, 2, 4);  // t[1:3, 2:4] transposed
  Tensor copy = view.clone();
  EXPECT_TRUE(copy.is_contiguous());
  EXPECT_EQ(copy.to_floats(), (std::vector<float>{6, 10, 7, 11}));
  t.data<float>()[6] = -1.0f;
  EXPECT_EQ(view.to_floats()[0], -1.0f);
  EXPECT_EQ(copy.to_floats()[0], 6.0f);
}

// Every element size, a transposed last dimension and a contiguous one: the copy's values are
// those the view's indices name, computed here from the index arithmetic alone.
TEST(Tensor, CloneOfAStridedViewCopiesEveryElementSizeInTheViewsOrder) {
  for (DType dt : {DType::f32, DType::f16, DType::i8}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const Tensor base = iota({3, 4, 5}).to(dt);  // base[i][j][k] = 20i + 5j + k
    const int rotate[] = {2, 0, 1}, swap[] = {1, 0, 2};
    const Tensor a = base.permute(rotate).slice(1, 1, 3).clone();  // a[k][i][j] = base[i + 1][j][k]
    ASSERT_TRUE(a.is_contiguous());
    ASSERT_EQ(a.shape(), (Shape{5, 2, 4}));
    const std::vector<float> av = a.to_floats();
    for (int k = 0; k < 5; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) EXPECT_EQ(av[static_cast<std::size_t>((k * 2 + i) * 4 + j)], 20 * (i + 1) + 5 * j + k);
    const Tensor b = base.permute(swap).slice(2, 1, 4).clone();  // b[j][i][k] = base[i][j][k + 1]
    ASSERT_EQ(b.shape(), (Shape{4, 3, 3}));
    const std::vector<float> bv = b.to_floats();
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) EXPECT_EQ(bv[static_cast<std::size_t>((j * 3 + i) * 3 + k)], 20 * i + 5 * j + k + 1);
  }
  const int reverse[] = {2, 1, 0}, transpose[] = {1, 0};
  EXPECT_EQ(iota({2, 0, 3}).permute(reverse).clone().numel(), 0);
  // Larger than a tile of the copy in both dimensions, with a remainder in each.
  const std::vector<float> t = iota({70, 40}).permute(transpose).clone().to_floats();  // t[i][j] = 40j + i
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 70; ++j) ASSERT_EQ(t[static_cast<std::size_t>(i * 70 + j)], 40 * j + i) << i << ", " << j;
}

TEST(Tensor, ConvertsBetweenDTypes) {
  const std::vector<float> values = {0.1f, -2.5f, 65504.0f, 1e5f};
  Tensor t = Tensor::from_floats({4}, values);
  Tensor h = t.to(DType::f16);
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.span<std::uint16_t>()[0], 0x2e66);
  EXPECT_EQ(h.to_floats(),
            (std::vector<float>{0.0999755859375f, -2.5f, 65504.0f,
                                std::numeric_limits<float>::infinity()}));
  Tensor b = t.to(DType::bf16);
  EXPECT_EQ(b.span<std::uint16_t>()[0], 0x3dcd);
  EXPECT_EQ(b.to_floats()[1], -2.5f);
  EXPECT_EQ(b.to(DType::f32).to_floats(), b.to_floats());
  // A strided view converts element by element in its logical order.
  const int perm[] = {1, 0};
  Tensor p = iota({2, 3}).permute(perm).to(DType::f16);
  EXPECT_EQ(p.to_floats(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // Same dtype: a copy.
  Tensor same = t.to(DType::f32);
  EXPECT_NE(same.raw(), t.raw());
  EXPECT_EQ(same.to_floats(), values);
}

TEST(Tensor, ConvertsToIntegersTruncatingAndSaturating) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor t = Tensor::from_floats({6}, std::vector<float>{3.7f, -3.7f, 1e10f, -1e10f, nan, 200.0f});
  Tensor i32 = t.to(DType::i32);
  EXPECT_EQ(std::vector<std::int32_t>(i32.span<std::int32_t>().begin(), i32.span<std::int32_t>().end()),
            (std::vector<std::int32_t>{3, -3, std::numeric_limits<std::int32_t>::max(),
                                       std::numeric_limits<std::int32_t>::min(), 0, 200}));
  EXPECT_EQ(t.to(DType::i8).to_floats(), (std::vector<float>{3, -3, 127, -128, 0, 127}));
  EXPECT_EQ(t.to(DType::u8).to_floats(), (std::vector<float>{3, 0, 255, 0, 0, 200}));
  EXPECT_EQ(t.to(DType::boolean).to_floats(), (std::vector<float>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(Tensor::from_floats({2}, std::vector<float>{0.0f, -0.0f}).to(DType::boolean).to_floats(),
            (std::vector<float>{0, 0}));
  Tensor ints = Tensor::from_ints({3}, std::vector<std::int32_t>{-7, 0, 1 << 20});
  EXPECT_EQ(ints.to(DType::f32).to_floats(), (std::vector<float>{-7, 0, 1 << 20}));
}

TEST(Tensor, FromValuesChecksTheCount) {
  EXPECT_THROW(Tensor::from_floats({2, 2}, std::vector<float>(3)), Error);
  EXPECT_THROW(Tensor::from_ints({2}, std::vector<std::int32_t>(3)), Error);
  Tensor s = Tensor::scalar(2.5f);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.to_floats(), (std::vector<float>{2.5f}));
}

TEST(Tensor, ViewOfChecksTheBufferRange) {
  auto buffer = Buffer::allocate(16);
  EXPECT_EQ(buffer->size(), 16u);
  Tensor v = Tensor::view_of(DType::f32, {2}, buffer, 8);
  v.data<float>()[1] = 7.0f;
  float stored = 0;
  std::memcpy(&stored, buffer->data() + 12, sizeof stored);
  EXPECT_EQ(stored, 7.0f);
  EXPECT_NO_THROW(Tensor::view_of(DType::f32, {4}, buffer, 0));
  EXPECT_NO_THROW(Tensor::view_of(DType::f32, {0}, buffer, 16));
  EXPECT_THROW(Tensor::view_of(DType::f32, {5}, buffer, 0), Error);
  EXPECT_THROW(Tensor::view_of(DType::f32, {2}, buffer, 12), Error);
  EXPECT_THROW(Tensor::view_of(DType::f32, {0}, buffer, 17), Error);
  EXPECT_THROW(Tensor::view_of(DType::f32, {1}, nullptr, 0), Error);
}

TEST(Tensor, BorrowedBufferKeepsItsOwnerAlive) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3});
  std::weak_ptr<std::vector<float>> watch = owner;
  Tensor t = Tensor::view_of(
      DType::f32, {3},
      Buffer::borrow(reinterpret_cast<std::byte*>(owner->data()), 12, owner), 0);
  owner.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(t.to_floats(), (std::vector<float>{1, 2, 3}));
  t = Tensor();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace orion
