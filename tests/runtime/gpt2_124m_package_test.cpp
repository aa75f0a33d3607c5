// GPT-2 124M's shapes (randomly initialised) compiled into an ANE package: deterministic
// bytes, fp16 weights in the blobs bit-identical to the model's weights rounded once, every
// kernel round-tripping through the MIL parser, and prefill + 32 decode steps on ane-sim
// against the f32 CPU executor. One test checks them all on one compile: ctest runs every test in
// a process of its own, so a compile shared by a suite's tests would be made once per test.
#include <gtest/gtest.h>

#include <iostream>

#include "compile/blob/weight_blob_reader.h"
#include "core/half.h"
#include "core/stopwatch.h"
#include "core/testing_temp_dir.h"
#include "test_scale.h"
#include "model/gpt2/gpt2_model.h"
#include "package_test_util.h"

namespace orion::runtime {
namespace {

using namespace testing;

class Gpt2_124mPackage : public ::testing::Test {
 protected:
  void SetUp() override { ORION_SKIP_LARGE_MODEL_TEST(); }
  static model::Gpt2Config config() { return model::Gpt2Config{}; }  // GPT-2 124M
  // A window of 32 and 63 cache slots keep the run short; the kernels are those of any window
  // (only the sequence axis differs).
  static model::AnePackageShape shape() { return {.window = 32, .capacity = 64}; }
  std::string path(const char* name) const { return dir_.path() + "/" + name; }

  testing_util::TempDir dir_;
};

// A second compile of the same model gives the same bytes, file for file.
void expect_same_package_bytes(const std::string& a, const std::string& b) {
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (!e.is_regular_file()) continue;
    const fs::path other = fs::path(b) / fs::relative(e.path(), a);
    ASSERT_TRUE(fs::exists(other)) << other;
    EXPECT_TRUE(read_file(e.path()) == read_file(other)) << e.path() << " differs";
    ++files;
  }
  EXPECT_GT(files, 40);
}

// The blob of a kernel, by the MIL name of the const it holds, against the model's weight
// transposed into conv's [out, in, 1, 1] layout and rounded to fp16 here.
void expect_blob_is_fp16_of(const std::string& kernel, const std::string& const_name, const Tensor& want_out_in) {
  const ir::Graph g = compile::parse_mil(read_file(fs::path(kernel) / "model.mil"), "model.mil", kernel);
  const auto id = g.find(const_name);
  ASSERT_TRUE(id.has_value()) << const_name << " in " << kernel;
  const Tensor got = g.node(*id).attr<Tensor>("value");
  ASSERT_EQ(got.dtype(), DType::f16);
  ASSERT_EQ(got.numel(), want_out_in.numel());
  const Tensor want = want_out_in.contiguous().to(DType::f16);
  const auto a = got.contiguous().span<std::uint16_t>(), b = want.span<std::uint16_t>();
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  EXPECT_EQ(differ, 0u) << const_name;
}

void expect_blobs_hold_the_weights_in_fp16(const std::string& pkg, const TensorMap& weights) {
  const int perm[] = {1, 0};
  // Hugging Face's Conv1D weight is [in, out]; the kernel's conv weight [out, in, 1, 1].
  expect_blob_is_fp16_of(pkg + "/prefill_ane0", "h_0_attn_c_attn_weight_conv", weights.at("h.0.attn.c_attn.weight").permute(perm));
  // The decode kernel that holds the last layer's MLP (cut by the on-chip budget).
  const compile::PackageManifest m = compile::read_manifest(pkg);
  std::string last_mlp;
  for (const compile::PackageStep& s : m.program("decode").steps)
    if (s.placement == compile::Placement::ane &&
        read_file(fs::path(pkg) / s.name / "model.mil").find("h_11_mlp_c_proj_weight_conv") != std::string::npos)
      last_mlp = s.name;
  ASSERT_FALSE(last_mlp.empty());
  expect_blob_is_fp16_of(pkg + "/" + last_mlp, "h_11_mlp_c_proj_weight_conv", weights.at("h.11.mlp.c_proj.weight").permute(perm));
  // The head's first piece: the tied embedding's first rows.
  std::string head;
  std::int64_t rows = 0;
  for (const compile::PackageStep& s : m.program("prefill").steps)
    if (s.placement == compile::Placement::ane && s.io.outputs.size() == 1 && s.io.outputs[0].name == "logits_chunk0") {
      head = s.name;
      rows = s.io.outputs[0].logical[1];
    }
  ASSERT_FALSE(head.empty());
  EXPECT_EQ(rows, 16753);  // 77 MB in three pieces under 32 MB
  expect_blob_is_fp16_of(pkg + "/" + head, "logits_chunk0_weight_conv", weights.at("wte.weight").slice(0, 0, rows));
}

TEST_F(Gpt2_124mPackage, CompilesTheSameBytesTwiceHoldsFp16WeightsRoundTripsAndMatchesTheCpu) {
  const TensorMap weights = model::gpt2_init_weights(config(), 1);
  Stopwatch sw;
  compile_package(config(), weights, {}, shape(), path("a"));
  std::cout << "[ info ] GPT-2 124M package compiled in " << sw.seconds() << " s\n";
  {
    SCOPED_TRACE("compiling twice gives the same bytes");
    compile_package(config(), weights, {}, shape(), path("b"));
    expect_same_package_bytes(path("a"), path("b"));
    fs::remove_all(path("b"));
  }
  {
    SCOPED_TRACE("the blobs hold the weights in fp16 bit for bit");
    expect_blobs_hold_the_weights_in_fp16(path("a"), weights);
  }
  {
    SCOPED_TRACE("every kernel round-trips through the MIL parser in both dialects");
    expect_kernels_round_trip(path("a"), compile::MilDialect::ios18);
    compile::PackageOptions m1;
    m1.dialect = compile::MilDialect::ios16;
    m1.target.m1_m2 = true;
    compile_package(config(), weights, m1, shape(), path("m1"));
    expect_kernels_round_trip(path("m1"), compile::MilDialect::ios16);
    fs::remove_all(path("m1"));
  }
  {
    SCOPED_TRACE("prefill and 32 decode steps match the CPU");
    sw.restart();
    const Errors e = run_package(config(), weights, {}, 24, 32, path("a"));
    std::cout << "[ info ] GPT-2 124M, ios18: rel L2 prefill " << e.prefill << ", decode " << e.decode << " (" << sw.seconds()
              << " s)\n";
    EXPECT_LT(e.prefill, 1e-2);
    EXPECT_LT(e.decode, 1e-2);
  }
}

}  // namespace
}  // namespace orion::runtime
