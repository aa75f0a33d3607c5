// runtime::run_program_folder, the path `orion mil run` takes, on a kind of program the
// hardware ran: fp32 inputs and outputs. The program is written here, and its output is checked
// against values worked out by hand in this file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/npy_file.h"
#include "core/testing_temp_dir.h"
#include "runtime/program_run.h"

namespace orion::runtime {
namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;

std::string run_test_program(const std::string& params, const std::string& body, const std::string& outs) {
  return "program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n"
         "    func main<ios18>(" + params + ") {\n" + body + "    } -> (" + outs + ");\n}\n";
}

ProgramRunOptions on_ane_sim(const std::string& inputs) {
  ProgramRunOptions o;
  o.device = ane_sim_options(1);
  o.inputs = inputs;
  return o;
}

// x fp32 [1, 256, 1, 64] in, y = x * 2 out in fp32: the public programs' form, a cast to fp16
// on the way in and back to fp32 on the way out. Its surfaces hold 65,536 bytes each, more
// than the 49,152-byte minimum an fp16 [1, 256, 1, 64] would be given.
constexpr const char* kFp32Body =
    "        string to16 = const()[name = string(\"to16\"), val = string(\"fp16\")];\n"
    "        tensor<fp16, [1, 256, 1, 64]> xh = cast(dtype = to16, x = x)[name = string(\"xh\")];\n"
    "        fp16 two = const()[name = string(\"two\"), val = fp16(0x1p+1)];\n"
    "        tensor<fp16, [1, 256, 1, 64]> yh = mul(x = xh, y = two)[name = string(\"yh\")];\n"
    "        string to32 = const()[name = string(\"to32\"), val = string(\"fp32\")];\n"
    "        tensor<fp32, [1, 256, 1, 64]> y = cast(dtype = to32, x = yh)[name = string(\"y\")];\n";

TEST(ProgramRun, Fp32InputsAndOutputsAreSizedAndPackedAsFp32) {
  TempDir dir;
  const std::string p = dir.file("p"), in = dir.file("in");
  fs::create_directories(p);
  fs::create_directories(in);
  testing_util::write_bytes(p + "/model.mil", run_test_program("tensor<fp32, [1, 256, 1, 64]> x", kFp32Body, "y"));
  // Eighths from -4 to 3.875 are exact in fp16; x[0] = 1 + 2^-12 is not, and fp16 rounds it
  // to 1 (its spacing at 1 is 2^-10), so a program that computes in fp16 gives y[0] = 2 where
  // fp32 would give 2.00048828125.
  Tensor x(DType::f32, {1, 256, 1, 64});
  auto xs = x.span<float>();
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(static_cast<int>(i % 64) - 32) / 8.0f;
  xs[0] = 1.0f + 1.0f / 4096.0f;
  write_npy(in + "/x.npy", x);

  const ProgramRun run = run_program_folder(p, on_ane_sim(in));
  ASSERT_EQ(run.inputs.size(), 1u);
  ASSERT_EQ(run.outputs.size(), 1u);
  EXPECT_EQ(run.inputs[0].value.dtype(), DType::f32);
  EXPECT_EQ(run.inputs[0].value.span<float>()[0], 1.0f + 1.0f / 4096.0f);  // bound as given
  const Tensor& y = run.outputs[0].value;
  ASSERT_EQ(y.dtype(), DType::f32);
  ASSERT_EQ(y.shape(), (Shape{1, 256, 1, 64}));
  const auto ys = y.span<float>();
  EXPECT_EQ(ys[0], 2.0f);
  int wrong = 0;
  for (std::size_t i = 1; i < ys.size(); ++i) wrong += ys[i] != static_cast<float>(static_cast<int>(i % 64) - 32) / 4.0f;
  EXPECT_EQ(wrong, 0);

  // The raw output is fp32: 65,536 bytes, y[0] = 2.0f = 0x40000000.
  write_program_run(run, dir.file("out"));
  EXPECT_EQ(fs::file_size(dir.file("out/y.f32")), 65536u);
  EXPECT_FALSE(fs::exists(dir.file("out/y.f16")));
  EXPECT_EQ(read_npy(dir.file("out/y.npy")).dtype(), DType::f32);
}

}  // namespace
}  // namespace orion::runtime
