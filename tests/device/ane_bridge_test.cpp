// The portable half of the `ane` device (device/ane_bridge_program.h, ane_bridge_rules.h), the
// device interface as the runtime uses it (through AneDevice&, on ane-sim), and what
// open_ane_device says where there is no Neural Engine. The Apple half is checked by the
// compile-only test ane_bridge_apple_compiles (scripts/check_ane_bridge.sh).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "device/ane_bridge_apple.h"
#include "device/ane_bridge_program.h"
#include "device/ane_bridge_rules.h"
#include "device/ane_sim.h"
#include "device/device_test_util.h"

namespace orion::device {
namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;
using namespace test_programs;

const ir::TensorType kIoType{DType::f16, {1, C, 1, S}};

// y = x * W, with W [1, 64, 1, 1] from `path`: a second weight file for the same program.
std::string scale_by_blob(const std::string& path) {
  return "    tensor<fp16, [1, 64, 1, 1]> W2 = const()[name = string(\"W2\"), val = tensor<fp16, [1, 64, 1, 1]>"
         "(BLOBFILE(path = string(\"" + path + "\"), offset = uint64(64)))];\n";
}

TEST(AneBridgeProgram, ReadsTextWeightsAndIo) {
  TempDir dir;
  write_folder(dir.path(), conv_program());
  const AneProgramSource src = read_program_folder(dir.path());
  EXPECT_EQ(src.mil_text, conv_program());
  ASSERT_EQ(src.weights.size(), 1u);
  EXPECT_EQ(src.weights[0].key, "@model_path/weights/weight.bin");
  EXPECT_EQ(src.weights[0].relative, "weights/weight.bin");
  EXPECT_EQ(src.weights[0].bytes, file_bytes(dir.path() + "/weights/weight.bin"));
  ASSERT_EQ(src.inputs.size(), 1u);
  EXPECT_EQ(src.inputs[0].name, "x");
  EXPECT_EQ(src.inputs[0].type, kIoType);
  ASSERT_EQ(src.outputs.size(), 1u);
  EXPECT_EQ(src.outputs[0].name, "y");
  EXPECT_EQ(src.outputs[0].type, kIoType);
}

// ANE027: the bridge binds in the order ane-sim binds, which the tests of ane-sim hold to the
// hardware's (alphabetical whatever the signature says).
TEST(AneBridgeProgram, BindingOrderIsAneSims) {
  TempDir dir;
  write_folder(dir.path(), unordered_io_program());
  const AneProgramSource src = read_program_folder(dir.path());
  AneSim sim;
  const AneProgramId id = sim.compile(dir.path());
  const auto names = [](const std::vector<AneIo>& io) {
    std::vector<std::string> n;
    for (const AneIo& i : io) n.push_back(i.name + " " + i.type.str());
    return n;
  };
  EXPECT_EQ(names(src.inputs), (std::vector<std::string>{"a f16[1, 64, 1, 384]", "b f16[1, 64, 1, 384]"}));
  EXPECT_EQ(names(src.outputs), (std::vector<std::string>{"m f16[1, 64, 1, 384]", "z f16[1, 64, 1, 384]"}));
  EXPECT_EQ(names(src.inputs), names(sim.inputs(id)));
  EXPECT_EQ(names(src.outputs), names(sim.outputs(id)));
}

// ANE026: a program without weights still gets a (empty) weights dictionary: no entries here.
TEST(AneBridgeProgram, ProgramWithoutWeights) {
  TempDir dir;
  write_folder(dir.path(), unordered_io_program());
  EXPECT_TRUE(read_program_folder(dir.path()).weights.empty());
}

TEST(AneBridgeProgram, EachWeightFileOnceInOrderOfFirstUse) {
  TempDir dir;
  // Consts from two files (read by the parser only); the first file is named again, spelled
  // differently, by a third const.
  const std::string mil = program(
      kIo + " x",
      scale_by_blob("@model_path/extra/scale.bin") +
          "    tensor<fp16, [64, 64, 1, 1]> W = const()[name = string(\"W\"), val = tensor<fp16, [64, 64, 1, 1]>"
          "(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n"
          "    tensor<fp16, [1, 64, 1, 1]> W3 = const()[name = string(\"W3\"), val = tensor<fp16, [1, 64, 1, 1]>"
          "(BLOBFILE(path = string(\"@model_path/./extra/scale.bin\"), offset = uint64(64)))];\n" +
          kConvConsts + "    " + kIo +
          " c = conv(dilations = dl, groups = gr, pad = pd, pad_type = pt, strides = st, weight = W, x = x)"
          "[name = string(\"c\")];\n    " +
          kIo + " y = mul(x = c, y = W2)[name = string(\"y\")];\n",
      "y");
  write_folder(dir.path(), mil);
  fs::create_directories(dir.path() + "/extra");
  fs::copy_file(dir.path() + "/weights/weight.bin", dir.path() + "/extra/scale.bin");
  const AneProgramSource src = read_program_folder(dir.path());
  ASSERT_EQ(src.weights.size(), 2u);
  EXPECT_EQ(src.weights[0].key, "@model_path/extra/scale.bin");
  EXPECT_EQ(src.weights[1].key, "@model_path/weights/weight.bin");
}

TEST(AneBridgeProgram, RefusesPathsOutsideTheFolderAndMissingFiles) {
  TempDir dir;
  const auto with_blob = [&](const std::string& path) {
    write_folder(dir.path(), program(kIo + " x", scale_by_blob(path) + "    " + kIo +
                                                     " y = mul(x = x, y = W2)[name = string(\"y\")];\n",
                                     "y"));
    return error_of([&] { read_program_folder(dir.path()); });
  };
  EXPECT_NE(with_blob("@model_path/../secret.bin").find("leaves the program's folder"), std::string::npos);
  EXPECT_NE(with_blob("@model_path/weights/../../secret.bin").find("leaves"), std::string::npos);
  EXPECT_NE(with_blob("/etc/passwd").find("does not start with @model_path/"), std::string::npos);
  const std::string missing = with_blob("@model_path/weights/missing.bin");
  EXPECT_NE(missing.find("missing.bin"), std::string::npos) << missing;
  EXPECT_NE(error_of([&] { read_program_folder(dir.path() + "/nowhere"); }).find("model.mil"), std::string::npos);
}

TEST(AneBridgeProgram, RefusesAnOutputThatIsNotProduced) {
  TempDir dir;
  write_folder(dir.path(), program(kIo + " x", "    " + kIo + " y = relu(x = x)[name = string(\"y\")];\n", "q"));
  const std::string m = error_of([&] { read_program_folder(dir.path()); });
  EXPECT_NE(m.find("output 'q' is not produced"), std::string::npos) << m;
  EXPECT_NE(m.find("model.mil:"), std::string::npos) << m;
}

TEST(AneCompileBudget, RefusesTheCompileOverTheLimit) {
  AneCompileBudget budget(2);
  budget.charge("a");
  budget.charge("b");
  const std::string m = error_of([&] { budget.charge("kernels/c"); });
  EXPECT_NE(m.find("ANE030"), std::string::npos) << m;
  EXPECT_NE(m.find("kernels/c"), std::string::npos) << m;
  EXPECT_NE(m.find("compile 3"), std::string::npos) << m;
  EXPECT_EQ(budget.used(), 2);  // the refused one never reached the device
}

TEST(AneSurfaceChecks, CountsSizesAndFit) {
  const std::vector<AneIo> two{{"a", kIoType}, {"b", kIoType}}, one{{"y", kIoType}};
  const std::size_t bytes = C * S * 2;
  EXPECT_EQ(surface_bytes(two[0]), bytes);
  AneSurface a(bytes), b(bytes), y(bytes), big(bytes + 64), big_y(bytes + 64), small(bytes - 64);
  const auto check = [&](std::vector<const AneSurface*> in, std::vector<AneSurface*> out) {
    return error_of([&] { check_surfaces("k", two, one, in, out); });
  };
  EXPECT_EQ(check({&a, &b}, {&y}), "(no error)");
  EXPECT_EQ(check({&big, &big}, {&big_y}), "(no error)");  // larger, one size per direction
  EXPECT_NE(check({&a}, {&y}).find("takes 2 input surfaces, got 1"), std::string::npos);
  EXPECT_NE(check({&a, &big}, {&y}).find("0x1d"), std::string::npos);
  EXPECT_NE(check({&a, &b}, {&small}).find("ANE012"), std::string::npos);
  // A surface above the minimum that is still too small for its tensor.
  const std::vector<AneIo> wide{{"w", {DType::f16, {1, C, 1, 2 * S}}}};
  AneSurface w(bytes);
  const std::string m = error_of([&] { check_surfaces("k", wide, one, {&w}, {&y}); });
  EXPECT_NE(m.find("ANE028"), std::string::npos) << m;
  EXPECT_NE(m.find("input w"), std::string::npos) << m;
}

// The runtime sees only AneDevice: ane-sim through it, counters and timings included.
TEST(AneDevice, AneSimThroughTheInterface) {
  TempDir dir;
  write_folder(dir.path(), unordered_io_program());
  AneSim sim;
  AneDevice& device = sim;
  EXPECT_EQ(device.timings().compile_ms, 0.0);
  const AneProgramId id = device.compile(dir.path());
  EXPECT_EQ(device.compiles(), 1);
  EXPECT_GT(device.timings().compile_ms, 0.0);
  device.load(id);
  EXPECT_EQ(device.loaded(), 1);
  ASSERT_EQ(device.inputs(id).size(), 2u);
  AneSurface a(C * S * 2), b(C * S * 2), m(C * S * 2), z(C * S * 2);
  device.evaluate(id, {&a, &b}, {&m, &z});
  const AneTimings t = device.timings();
  EXPECT_GT(t.load_ms, 0.0);
  EXPECT_GT(t.evaluate_ms, 0.0);
  device.unload(id);
  EXPECT_EQ(device.loaded(), 0);
}

#ifndef __APPLE__
TEST(AneDevice, OpeningTheAneOffMacOsSaysSo) {
  const std::string m = error_of([] { open_ane_device(); });
  EXPECT_NE(m.find("device ane"), std::string::npos) << m;
  EXPECT_NE(m.find("macOS"), std::string::npos) << m;
}
#endif

}  // namespace
}  // namespace orion::device
