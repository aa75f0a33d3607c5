// PackedLinear's two kinds of storage: a borrowed layer shares the given tensors (no copy)
// and computes bit for bit what a packed layer of the same weights computes; and its batched
// form, each vector apply()'s bits.
#include "engine/fast/packed_linear.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace orion::engine {
namespace {

TEST(PackedLinear, BorrowedSharesTheTensorsAndMatchesPacked) {
  Rng rng(4);
  Tensor w(DType::f32, {128, 40});  // [in, out], as GPT-2's Conv1D stores it
  rng.fill_normal(w.span<float>(), 0.0f, 1.0f);
  Tensor b(DType::f32, {40});
  rng.fill_normal(b.span<float>(), 0.0f, 1.0f);
  std::vector<float> x(128);
  rng.fill_normal(std::span<float>(x), 0.0f, 1.0f);
  ThreadPool pool(1);
  for (model::WeightDType dtype : {model::WeightDType::f32, model::WeightDType::f16, model::WeightDType::q8}) {
    for (int block : {32, 64}) {
      const PackedLinear packed = PackedLinear::pack(w, true, b, dtype, block);
      EXPECT_GT(packed.owned_bytes(), 0u);
      const PackedLinear borrowed = PackedLinear::borrow(packed.weight(), packed.scales(), packed.bias(), dtype);
      EXPECT_EQ(borrowed.owned_bytes(), 0u);
      EXPECT_EQ(borrowed.weight().raw(), packed.weight().raw()) << "copied the weights";
      EXPECT_EQ(borrowed.rows(), 40);
      EXPECT_EQ(borrowed.cols(), 128);
      EXPECT_EQ(borrowed.q8_block(), dtype == model::WeightDType::q8 ? block : 0);
      std::vector<float> y1(40), y2(40);
      packed.apply(x.data(), y1.data(), pool);
      borrowed.apply(x.data(), y2.data(), pool);
      EXPECT_EQ(std::memcmp(y1.data(), y2.data(), sizeof(float) * 40), 0) << model::weight_dtype_name(dtype) << " " << block;
    }
  }
}

TEST(PackedLinear, BorrowRefusesWrongTensors) {
  const Tensor q(DType::i8, {4, 64});
  EXPECT_THROW(PackedLinear::borrow(q, Tensor{}, Tensor{}, model::WeightDType::q8), Error);                      // no scales
  EXPECT_THROW(PackedLinear::borrow(q, Tensor(DType::f32, {4, 3}), Tensor{}, model::WeightDType::q8), Error);    // block 21.3
  EXPECT_THROW(PackedLinear::borrow(q, Tensor(DType::f32, {4, 4}), Tensor{}, model::WeightDType::q8), Error);    // block 16
  EXPECT_THROW(PackedLinear::borrow(q, Tensor(DType::f16, {4, 2}), Tensor{}, model::WeightDType::q8), Error);    // f16 scales
  EXPECT_THROW(PackedLinear::borrow(q, Tensor{}, Tensor{}, model::WeightDType::f16), Error);                     // i8 as f16
  EXPECT_THROW(PackedLinear::borrow(Tensor(DType::f32, {4, 64}), Tensor{}, Tensor(DType::f32, {5}), model::WeightDType::f32), Error);
  EXPECT_THROW(PackedLinear::borrow(Tensor(DType::f32, {64, 4}).permute(std::vector<int>{1, 0}), Tensor{}, Tensor{},
                                    model::WeightDType::f32), Error);  // not contiguous
  EXPECT_NO_THROW(PackedLinear::borrow(q, Tensor(DType::f32, {4, 2}), Tensor(DType::f32, {4}), model::WeightDType::q8));
}

// apply_columns, which the batched decode runs, reads W once for all its vectors in every format
// and gives each vector apply()'s bits: bias and the fused GELU included, 1 to 6 vectors.
TEST(PackedLinear, ColumnsEqualApplyInEveryFormat) {
  Rng rng(8);
  Tensor w(DType::f32, {45, 128});  // [out, in]
  rng.fill_normal(w.span<float>(), 0.0f, 1.0f);
  Tensor b(DType::f32, {45});
  rng.fill_normal(b.span<float>(), 0.0f, 1.0f);
  std::vector<float> X(6 * 128);
  rng.fill_normal(std::span<float>(X), 0.0f, 1.0f);
  ThreadPool pool(2);
  for (model::WeightDType dtype : {model::WeightDType::f32, model::WeightDType::f16, model::WeightDType::q8, model::WeightDType::q4}) {
    const PackedLinear lin = PackedLinear::pack(w, false, b, dtype);
    for (exec::cpu::Activation act : {exec::cpu::Activation::none, exec::cpu::Activation::gelu})
      for (std::int64_t n = 1; n <= 6; ++n) {
        std::vector<float> Y(static_cast<std::size_t>(n * 45)), y(45);
        lin.apply_columns(X.data(), n, Y.data(), pool, exec::cpu::best_isa(), act);
        for (std::int64_t j = 0; j < n; ++j) {
          lin.apply(X.data() + j * 128, y.data(), pool, exec::cpu::best_isa(), act);
          EXPECT_EQ(std::memcmp(y.data(), Y.data() + j * 45, sizeof(float) * 45), 0)
              << model::weight_dtype_name(dtype) << " n " << n << " vector " << j;
        }
      }
  }
}

}  // namespace
}  // namespace orion::engine
