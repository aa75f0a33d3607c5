// runtime::run_program_folder, the path `orion mil run` takes, on two kinds of program the
// hardware ran: fp32 inputs and outputs, and a weight file whose record gives a size larger than
// its data. The programs and weight files are written byte by byte here, and each output is
// checked against values worked out by hand in this file.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/npy_file.h"
#include "core/testing_temp_dir.h"
#include "error_of.h"
#include "runtime/program_run.h"

namespace orion::runtime {
namespace {

namespace fs = std::filesystem;
using orion::testing::error_of;
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

// A weight file with one blob: 64 fp16 values whose record says 256 bytes, twice its data, as
// a benchmark's writer that puts one size in every record writes it. The file ends with the
// data, so the size runs past its end; the 128 bytes the program's type needs do not.
std::string blob_with_size_field(const std::vector<float>& values, std::uint64_t size_field, std::size_t cut = 0) {
  std::string b(128 + values.size() * 2, '\0');
  const auto put = [&](std::size_t at, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put(0, 1, 4);            // count
  put(4, 2, 4);            // version
  put(64, 0xDEADBEEF, 4);  // sentinel
  put(68, 1, 4);           // fp16
  put(72, size_field, 8);
  put(80, 128, 8);         // data offset
  for (std::size_t i = 0; i < values.size(); ++i) put(128 + 2 * i, float_to_half(values[i]), 2);
  b.resize(b.size() - cut);
  return b;
}

// x [1, 64, 1, 384] fp16 plus a per-channel bias read from weights/weight.bin.
constexpr const char* kBiasBody =
    "        tensor<fp16, [1, 64, 1, 1]> b = const()[name = string(\"b\"), val = tensor<fp16, [1, 64, 1, 1]>"
    "(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n"
    "        tensor<fp16, [1, 64, 1, 384]> y = add(x = x, y = b)[name = string(\"y\")];\n";

TEST(ProgramRun, AWeightRecordLargerThanItsDataIsReadAtTheProgramsSizeWithAWarning) {
  TempDir dir;
  const std::string p = dir.file("p"), in = dir.file("in");
  fs::create_directories(p + "/weights");
  fs::create_directories(in);
  testing_util::write_bytes(p + "/model.mil", run_test_program("tensor<fp16, [1, 64, 1, 384]> x", kBiasBody, "y"));
  std::vector<float> bias(64);
  for (std::size_t c = 0; c < 64; ++c) bias[c] = static_cast<float>(c) / 8.0f - 4.0f;  // -4 .. 3.875
  testing_util::write_bytes(p + "/weights/weight.bin", blob_with_size_field(bias, 256));
  Tensor x(DType::f32, {1, 64, 1, 384});
  auto xs = x.span<float>();
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 16) / 4.0f;  // 0 .. 3.75
  write_npy(in + "/x.npy", x);

  ::testing::internal::CaptureStderr();
  const ProgramRun run = run_program_folder(p, on_ane_sim(in));
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warnings.find("warning: " + p + "/weights/weight.bin: at byte 72: the record gives 256 bytes, the "
                          "program's f16[1, 64, 1, 1] needs 128: those are read, the rest ignored"),
            std::string::npos)
      << warnings;
  ASSERT_EQ(run.outputs.size(), 1u);
  const std::vector<float> y = run.outputs[0].value.to_floats();
  ASSERT_EQ(y.size(), 64u * 384u);
  // Each sum is a multiple of 1/8 below 8: exact in fp16.
  int wrong = 0;
  for (std::size_t c = 0; c < 64; ++c)
    for (std::size_t s = 0; s < 384; ++s)
      wrong += y[c * 384 + s] != static_cast<float>((c * 384 + s) % 16) / 4.0f + static_cast<float>(c) / 8.0f - 4.0f;
  EXPECT_EQ(wrong, 0);

  // A size smaller than the tensor, and a tensor whose bytes run past the end of the file, stay
  // errors that name the file, the byte and the problem.
  testing_util::write_bytes(p + "/weights/weight.bin", blob_with_size_field(bias, 126));
  std::string e = error_of([&] { run_program_folder(p, on_ane_sim(in)); });
  EXPECT_NE(e.find(p + "/weights/weight.bin: at byte 64: blob of 126 bytes does not hold f16[1, 64, 1, 1] (128 bytes)"),
            std::string::npos)
      << e;
  testing_util::write_bytes(p + "/weights/weight.bin", blob_with_size_field(bias, 256, 2));
  e = error_of([&] { run_program_folder(p, on_ane_sim(in)); });
  EXPECT_NE(e.find(p + "/weights/weight.bin: at byte 72: f16[1, 64, 1, 1] (128 bytes) at 128 runs past the end of the "
                       "file (254 bytes)"),
            std::string::npos)
      << e;
}

// On a device the caller keeps open, as `orion doctor` runs many programs: inputs given by
// name, several evaluations, one compile, and the program unloaded after a failure too.
TEST(ProgramRun, OnAnOpenDeviceWithValuesByName) {
  TempDir dir;
  const std::string p = dir.file("p");
  fs::create_directories(p + "/weights");
  testing_util::write_bytes(p + "/model.mil", run_test_program("tensor<fp16, [1, 64, 1, 384]> x", kBiasBody, "y"));
  std::vector<float> bias(64);
  for (std::size_t c = 0; c < 64; ++c) bias[c] = static_cast<float>(c) / 8.0f - 4.0f;
  testing_util::write_bytes(p + "/weights/weight.bin", blob_with_size_field(bias, 128));
  Tensor x(DType::f32, {1, 64, 1, 384});
  auto xs = x.span<float>();
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 16) / 4.0f;

  const std::unique_ptr<device::AneDevice> sim = open_device(ane_sim_options(1));
  ProgramRunOptions o;
  o.values.emplace("x", x);
  o.evaluations = 3;
  const ProgramRun run = run_program_folder(p, *sim, o);
  ASSERT_EQ(run.outputs.size(), 1u);
  const std::vector<float> y = run.outputs[0].value.to_floats();
  int wrong = 0;
  for (std::size_t c = 0; c < 64; ++c)
    for (std::size_t s = 0; s < 384; ++s)
      wrong += y[c * 384 + s] != static_cast<float>((c * 384 + s) % 16) / 4.0f + static_cast<float>(c) / 8.0f - 4.0f;
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(sim->compiles(), 1);
  EXPECT_EQ(sim->loaded(), 0);

  o.values["x"] = Tensor(DType::f32, {2});
  const std::string e = error_of([&] { run_program_folder(p, *sim, o); });
  EXPECT_NE(e.find("input x: the value given has shape [2], the program's input is"), std::string::npos) << e;
  EXPECT_EQ(sim->loaded(), 0);
}

}  // namespace
}  // namespace orion::runtime
