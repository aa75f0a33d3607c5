// QLoRA: a LoRA over a base kept in MLX's 4-bit words. Its loss and adapter gradients equal
// those over the same base widened to f32 (the words dequantized by the folder reader, an
// already tested path) within the rounding of the head's products summed by chunk, and after
// rematerialization the memory plan never holds the widened
// base: each matrix is widened where it is read and its slot reused.
#include <gtest/gtest.h>

#include "exec/cpu/executor.h"
#include "ir/transforms/rematerialize.h"
#include "model/llama/llama.h"
#include "model/llama/llama_model.h"
#include "model/lora/lora_adapter.h"
#include "model/lora/lora_config.h"
#include "train/autodiff.h"
#include "train/model_loss.h"
#include "../model/llama_test_config.h"

namespace orion::train {
namespace {

struct QloraBase {
  model::LlamaConfig config = model::testing::small_llama_config({4, 256, 4, 2, 768, 8192, true, 16});
  FrozenBase quantized, widened;
  std::size_t widened_bytes = 0;
  model::LoraConfig lora;
  TensorMap adapter;

  QloraBase() {
    const TensorMap w = model::llama_init_weights(config, 5);
    for (const auto& [name, t] : w) {
      // The matrices and the embedding in 4 bits (groups of 64), the norms in floats.
      if (t.rank() == 2) {
        quantized.quantized.emplace(name, model::quantize(t, {.bits = 4, .group = 64}));
        quantized.chunk_bytes = std::size_t{1} << 20;  // the head of 4 MB in four products
        widened.floats.emplace(name, model::dequantize(quantized.quantized.at(name)));
        widened_bytes += t.nbytes();
      } else {
        quantized.floats.emplace(name, t);
        widened.floats.emplace(name, t);
      }
    }
    lora.rank = 4;
    lora.targets = model::lora_targets("llama", "");
    adapter = model::init_lora_adapter(model::llama_graph(config, {4, 0, false}), lora, 3).weights;
    // B starts at zero: make it not, so the adapter's path counts in the loss.
    for (auto& [name, t] : adapter)
      if (name.find("lora_B") != std::string::npos) {
        std::span<float> v = t.span<float>();
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * static_cast<float>(i % 7) - 0.03f;
      }
  }

  std::vector<std::string> wrt() const {
    std::vector<std::string> names;
    for (const auto& [name, t] : adapter) names.push_back(name);
    return names;
  }
  ir::Graph gradients(const FrozenBase& base, bool remat) const {
    const LossGraphFn loss = lora_loss_graph(model_loss_graph(config), base, lora);
    ir::Graph g = gradient_graph(loss(1, 16), "loss", wrt());
    return remat ? ir::rematerialize(g) : g;
  }
  TensorMap feed() const {
    TensorMap f = adapter;
    std::vector<std::int32_t> tokens, positions, targets;
    for (int i = 0; i < 16; ++i) {
      tokens.push_back((i * 977 + 13) % 8192);
      positions.push_back(i);
      targets.push_back((i * 331 + 7) % 8192);
    }
    f["tokens"] = Tensor::from_ints({16}, tokens);
    f["positions"] = Tensor::from_ints({16}, positions);
    f["targets"] = Tensor::from_ints({16}, targets);
    f["loss_weights"] = Tensor::from_floats({16}, std::vector<float>(16, 1.0f / 16));
    return f;
  }
};

const QloraBase& qlora_base() {
  static const QloraBase f;
  return f;
}

TEST(Qlora, LossAndAdapterGradientsEqualTheWidenedBases) {
  const QloraBase& f = qlora_base();
  exec::CpuExecutor q(f.gradients(f.quantized, true), {.threads = 2});
  exec::CpuExecutor w(f.gradients(f.widened, false), {.threads = 2});
  const std::vector<Tensor> a = q.run(f.feed()), b = w.run(f.feed());
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> x = a[i].to_floats(), y = b[i].to_floats();
    ASSERT_EQ(x.size(), y.size());
    double diff = 0, norm = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      diff += (x[j] - y[j]) * static_cast<double>(x[j] - y[j]);
      norm += y[j] * static_cast<double>(y[j]);
    }
    EXPECT_LE(std::sqrt(diff), 1e-5 * std::sqrt(norm) + 1e-12) << q.graph().node(q.graph().outputs()[i]).name;
  }
}

// The words stay words: the graph's constants hold the 4-bit base, and its memory plan (every
// intermediate value, the backward pass's included) is a fraction of the widened base. Without
// rematerialization every widened matrix lives until the backward pass reads it again.
TEST(Qlora, TheBaseIsNeverWidenedWhole) {
  const QloraBase& f = qlora_base();
  const ir::Graph g = f.gradients(f.quantized, true);
  EXPECT_FALSE(ir::has_shared_widened_constants(g));
  std::size_t constant_bytes = 0;
  for (const ir::Node& n : g.nodes())
    if (n.op == ir::Op::constant) constant_bytes += n.attr<Tensor>("value").nbytes();
  EXPECT_LT(constant_bytes, f.widened_bytes / 3);  // 5 bits a weight, the head's chunks counted again
  const exec::CpuExecutor remat(g), kept(f.gradients(f.quantized, false));
  EXPECT_LT(remat.memory_plan().planned_bytes, f.widened_bytes / 4) << remat.memory_plan().planned_bytes;
  EXPECT_GT(kept.memory_plan().planned_bytes, f.widened_bytes / 2) << kept.memory_plan().planned_bytes;
}

}  // namespace
}  // namespace orion::train
