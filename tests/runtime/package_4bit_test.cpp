// A Qwen3-shaped model compiled with 4-bit weights (lut4: constexpr_lut_to_dense, int4 and
// uint4: constexpr_blockwise_shift_scale) and run on ane-sim, held to the CPU executor on the
// same model whose weights are the package's: dequantized by this file from the kernels' MIL
// text and weight blobs (nibbles, tables, scales and offsets read here, not through the parser).
// The difference left is fp16 arithmetic. The kernels' weight files are at most 30% of the fp16
// package's, and every kernel round trips through the MIL parser.
#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "compile/blob/weight_blob_reader.h"
#include "compile/mil/mil_parser.h"
#include "core/half.h"
#include "core/testing_temp_dir.h"
#include "model/llama/llama_model.h"
#include "model/llama_test_config.h"
#include "package_test_util.h"

namespace orion::runtime {
namespace {

using namespace testing;

model::LlamaConfig qwen3_config() {
  // Untied: the head's weights are a param of their own, so that the host's embedding lookup
  // keeps the float table. Wide enough that the weights, not the constants every kernel holds
  // whatever the width (the causal mask), make most of the weight files.
  model::LlamaConfig c = model::testing::small_llama_config({1, 256, 4, 2, 640, 512, false, 96});
  model::testing::make_family(c, "qwen3", 64);
  return c;
}

model::LlamaModel qwen3(const TensorMap& w) { return model::LlamaModel::from_weights(qwen3_config(), TensorMap(w), "qwen3 4-bit"); }

TensorMap qwen3_weights() {
  TensorMap w = model::llama_init_weights(qwen3_config(), 5);
  Rng rng(6);
  for (auto& [name, t] : w)
    if (t.rank() == 1) rng.fill_uniform(t.span<float>(), 0.5f, 1.5f);
  return w;
}

// A const's BLOBFILE, by its MIL name.
struct Blob {
  std::string type;
  Shape shape;
  std::span<const std::byte> data;
};

// Nibble i of `b`: the first value of a byte in its low four bits.
int nibble(std::span<const std::byte> b, std::size_t i) { return (std::to_integer<int>(b[i / 2]) >> (i % 2 ? 4 : 0)) & 0xf; }
float half_at(std::span<const std::byte> b, std::size_t i) {
  return half_to_float(static_cast<std::uint16_t>(std::to_integer<unsigned>(b[2 * i]) | std::to_integer<unsigned>(b[2 * i + 1]) << 8));
}

// The package's 4-bit weights, dequantized to fp16 values (as the ANE computes them) by param
// name ([O, C]), from every kernel's MIL and blob; a weight compiled into several kernels must
// come out the same from each.
std::map<std::string, std::vector<float>> dequantized_weights(const std::string& dir, const TensorMap& params) {
  std::map<std::string, std::string> by_mil_name;
  for (const auto& [name, t] : params) by_mil_name[compile::mil_identifier(name)] = name;
  std::map<std::string, std::vector<float>> out;
  const compile::PackageManifest m = compile::read_manifest(dir);
  for (const compile::PackageProgram& p : m.programs)
    for (const compile::PackageStep& s : p.steps) {
      if (s.placement != compile::Placement::ane) continue;
      const fs::path folder = fs::path(dir) / s.name;
      const compile::MilAst ast = compile::parse_mil_ast(read_file(folder / "model.mil"), s.name);
      const compile::WeightBlobReader blobs = compile::WeightBlobReader::open((folder / "weights" / "weight.bin").string());
      std::map<std::string, Blob> consts;
      for (const compile::MilOperation& op : ast.functions.at(0).ops) {
        if (op.op == "const") {
          for (const compile::MilNamedLiteral& a : op.attrs)
            if (a.name == "val" && a.value.is_blob)
              consts[op.outputs[0].name] = {a.value.type.dtype, a.value.type.shape, blobs.at(a.value.blob_offset).data};
          continue;
        }
        if (op.op != "constexpr_lut_to_dense" && op.op != "constexpr_blockwise_shift_scale") continue;
        std::map<std::string, std::string> arg;
        for (const compile::MilNamedArg& a : op.args) arg[a.name] = a.value.name;
        const Shape& ws = op.outputs[0].type.shape;
        const std::size_t O = static_cast<std::size_t>(ws[0]), C = static_cast<std::size_t>(ws[1]);
        std::vector<float> w(O * C);
        if (op.op == "constexpr_lut_to_dense") {
          const Blob& idx = consts.at(arg.at("indices"));
          const Blob& lut = consts.at(arg.at("lut"));
          EXPECT_EQ(idx.type, "uint4");
          const std::size_t rows = O / static_cast<std::size_t>(lut.shape[0]);  // output channels per table
          for (std::size_t i = 0; i < w.size(); ++i) w[i] = half_at(lut.data, i / C / rows * 16 + static_cast<std::size_t>(nibble(idx.data, i)));
        } else {
          const Blob& q = consts.at(arg.at("data"));
          const Blob& sc = consts.at(arg.at("scale"));
          const std::size_t nb = static_cast<std::size_t>(sc.shape[1]), block = C / nb;
          for (std::size_t i = 0; i < w.size(); ++i) {
            const std::size_t k = i / C * nb + i % C / block;
            int v = nibble(q.data, i);
            if (q.type == "int4" && v > 7) v -= 16;
            float z = 0;
            if (arg.contains("offset")) {
              const Blob& off = consts.at(arg.at("offset"));
              z = off.type == "uint4" ? static_cast<float>(nibble(off.data, k)) : half_at(off.data, k);
            }
            w[i] = half_to_float(float_to_half(half_at(sc.data, k) * (static_cast<float>(v) - z)));
          }
        }
        // The conv weight of param P is named P_conv (lower_layout), then its form's suffix; the
        // graph's own constants (RoPE's rotation, grouped-query selections) are in the form only
        // where it holds them exactly, their 0 and +-1, which the CPU's run of the model checks.
        const std::string& var = op.outputs[0].name;
        std::string param;
        for (const auto& [mil, name] : by_mil_name)
          if (var.starts_with(mil + "_conv_") && name.size() > param.size()) param = name;
        if (param.empty()) {
          for (float x : w) EXPECT_TRUE(x == 0 || x == 1 || x == -1) << var << ": " << x;
          continue;
        }
        const auto [it, fresh] = out.emplace(param, w);
        if (!fresh) {
          EXPECT_EQ(it->second, w) << param << " differs between kernels";
        }
      }
    }
  return out;
}

// The bytes of every kernel's weight files.
std::uintmax_t kernel_weight_file_bytes(const std::string& dir) {
  std::uintmax_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().parent_path().filename() == "weights") n += e.file_size();
  return n;
}

struct Form {
  const char* name;
  compile::WeightForm form;
  std::int64_t block;
};

class Package4Bit : public ::testing::TestWithParam<Form> {
 protected:
  // The model and its fp16 package's weight files, made once for every form.
  static void SetUpTestSuite() {
    weights_ = new TensorMap(qwen3_weights());
    dir_ = new testing_util::TempDir;
    compile_package(qwen3(*weights_), {}, {.window = 32}, dir_->path() + "/f16");
    fp16_bytes_ = kernel_weight_file_bytes(dir_->path() + "/f16");
  }
  static void TearDownTestSuite() {
    delete weights_;
    delete dir_;
  }
  static inline TensorMap* weights_ = nullptr;
  static inline testing_util::TempDir* dir_ = nullptr;
  static inline std::uintmax_t fp16_bytes_ = 0;
};

TEST_P(Package4Bit, RunsOnAneSimAsTheCpuOnItsDequantizedWeights) {
  const TensorMap& w = *weights_;
  const std::string pkg = dir_->path() + "/" + GetParam().name;
  compile::PackageOptions po;
  po.target.weights = GetParam().form;
  po.target.weight_block = GetParam().block;
  compile_package(qwen3(w), po, {.window = 32}, pkg);

  // Every matrix of the layers and the head is in the form.
  const std::map<std::string, std::vector<float>> dq = dequantized_weights(pkg, w);
  std::size_t matrices = 0;
  for (const auto& [name, t] : w) matrices += t.rank() == 2 && name != "model.embed_tokens.weight";
  EXPECT_EQ(dq.size(), matrices);
  TensorMap wq = w;
  for (const auto& [name, v] : dq) wq[name] = Tensor::from_floats(w.at(name).shape(), v);

  const model::LlamaModel m = qwen3(wq);
  const Errors e = run_package(m, po, 24, 4, pkg);
  // What the 4-bit weights cost against the float ones, on the CPU.
  const std::vector<std::int32_t> tokens = random_tokens(24, m.vocab_size(), 11);
  const double quantization =
      model::testing::rel_l2(reference_logits(qwen3(w), tokens).to_floats(), reference_logits(m, tokens).to_floats());
  const std::uintmax_t bytes = kernel_weight_file_bytes(pkg);
  std::cout << "[ info ] " << GetParam().name << ": rel L2 against the CPU on the dequantized weights: prefill " << e.prefill
            << ", decode " << e.decode << "; the dequantized weights against the float ones " << quantization
            << "; kernel weight files " << bytes << " bytes, fp16's " << fp16_bytes_ << " ("
            << 100.0 * static_cast<double>(bytes) / static_cast<double>(fp16_bytes_) << "%)\n";
  // fp16 arithmetic alone (the fp16 package of a Llama: about 1.3e-3 at width 64), where the
  // weights themselves moved much further.
  EXPECT_LT(e.prefill, 1e-2);
  EXPECT_LT(e.decode, 1e-2);
  EXPECT_GT(quantization, 10 * e.prefill);
  EXPECT_LE(static_cast<double>(bytes), 0.30 * static_cast<double>(fp16_bytes_));
  expect_kernels_round_trip(pkg, compile::MilDialect::ios18);
}

INSTANTIATE_TEST_SUITE_P(Forms, Package4Bit,
                         ::testing::Values(Form{"lut4", compile::WeightForm::lut4, 8}, Form{"int4", compile::WeightForm::int4, 64},
                                           Form{"uint4", compile::WeightForm::uint4, 64}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace orion::runtime
