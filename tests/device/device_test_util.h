#pragma once
// Shared by the device tests: hand-written MIL programs and kernel folders (the ios18 header, a
// [1, 64, 1, 384] fp16 I/O type, exactly the 49,152-byte surface minimum, and a 1x1 conv whose
// weights come from weights/weight.bin) and error messages.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compile/blob/weight_blob_writer.h"
#include "core/error.h"
#include "core/half.h"
#include "core/mapped_file.h"

namespace orion::device::test_programs {

inline constexpr std::string_view kHeader =
    "program(1.3)\n"
    "[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", \"3510.2.1\"}, {\"coremlc-version\", "
    "\"3505.4.1\"}, {\"coremltools-component-milinternal\", \"\"}, {\"coremltools-version\", \"9.0\"}})]\n"
    "{\n";

inline constexpr std::int64_t C = 64, S = 384;  // [1, 64, 1, 384] fp16: 49,152 bytes
inline const std::string kIo = "tensor<fp16, [1, 64, 1, 384]>";

// The conv parameters as named consts, as working programs write them.
inline const std::string kConvConsts =
    "    string pt = const()[name = string(\"pt\"), val = string(\"valid\")];\n"
    "    tensor<int32, [2]> st = const()[name = string(\"st\"), val = tensor<int32, [2]>([1, 1])];\n"
    "    tensor<int32, [4]> pd = const()[name = string(\"pd\"), val = tensor<int32, [4]>([0, 0, 0, 0])];\n"
    "    tensor<int32, [2]> dl = const()[name = string(\"dl\"), val = tensor<int32, [2]>([1, 1])];\n"
    "    int32 gr = const()[name = string(\"gr\"), val = int32(1)];\n";

inline std::string program(const std::string& params, const std::string& body, const std::string& outputs) {
  return std::string(kHeader) + "  func main<ios18>(" + params + ") {\n" + body + "  } -> (" + outputs + ");\n}\n";
}

// y = conv(x, W) with W [64, 64, 1, 1] from the blob.
inline std::string conv_program() {
  return program(kIo + " x",
                 "    tensor<fp16, [64, 64, 1, 1]> W = const()[name = string(\"W\"), val = tensor<fp16, [64, 64, 1, 1]>"
                 "(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n" +
                     kConvConsts + "    " + kIo +
                     " y = conv(dilations = dl, groups = gr, pad = pd, pad_type = pt, strides = st, weight = W, x = "
                     "x)[name = string(\"y\")];\n",
                 "y");
}

// Declared (b, a) and returned (z, m): the device binds a, b and m, z. z = a - b, m = a * b.
inline std::string unordered_io_program() {
  return program(kIo + " b, " + kIo + " a",
                 "    " + kIo + " z = sub(x = a, y = b)[name = string(\"z\")];\n    " + kIo +
                     " m = mul(x = a, y = b)[name = string(\"m\")];\n",
                 "z, m");
}

inline std::vector<std::byte> file_bytes(const std::string& path) {
  const auto f = MappedFile::open(path);
  return {f->bytes().begin(), f->bytes().end()};
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Weights W[o][i] = (o - i) / 64 when `shift` is 0: exact in fp16.
inline std::vector<std::uint16_t> weights(int shift) {
  std::vector<std::uint16_t> w(C * C);
  for (int o = 0; o < C; ++o)
    for (int i = 0; i < C; ++i) w[o * C + i] = float_to_half(static_cast<float>(o - i + shift) / 64.0f);
  return w;
}

inline void write_folder(const std::string& dir, const std::string& mil, int shift = 0) {
  std::filesystem::create_directories(dir + "/weights");
  write_text(dir + "/model.mil", mil);
  compile::WeightBlobWriter w;
  w.add_fp16(weights(shift));
  w.write(dir + "/weights/weight.bin");
}

// The message of the orion::Error `f` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace orion::device::test_programs
