// 4-bit weights in MIL: the IR forms of constexpr_blockwise_shift_scale over int4/uint4 data and
// of constexpr_lut_to_dense (iOS18 grouped, iOS16 per tensor), written and parsed back to the
// same IR, their blobs checked against nibbles packed here by hand, and bad programs refused
// with errors naming the op and the problem.
#include <gtest/gtest.h>

#include "compile/blob/weight_blob_reader.h"
#include "compile/mil/mil_constexpr.h"
#include "compile/mil/mil_to_ir.h"
#include "compile/mil/mil_writer.h"
#include "compile/mil_test_util.h"
#include "core/testing_temp_dir.h"
#include "ir/printer.h"

namespace orion::compile {
namespace {

using testing::error_of;
using testing::random_f16;

constexpr std::int64_t kO = 16, kC = 32, kS = 32;

// The codes of element i, spread over all 16 values.
std::int32_t code_at(std::int64_t i) { return static_cast<std::int32_t>((i * 7 + i / kC) % 16); }

// x [1, C, 1, S] through a 1x1 conv whose weight [O, C, 1, 1] is a LUT form: `tables` LUTs along
// the output axis (0: the iOS16 form's one table [16]).
ir::Graph lut_conv(std::int64_t tables) {
  ir::Builder b("main");
  Rng rng(5);
  const ir::Value x = b.input("x", DType::f16, {1, kC, 1, kS});
  const bool ios16 = tables == 0;
  const Shape lut_shape = ios16 ? Shape{16} : Shape{tables, 1, 1, 1, 16, 1};
  const ir::Value lut = b.name(b.constant(random_f16(rng, lut_shape, -0.5f, 0.5f)), "w_lut");
  const ir::Value flat = b.name(b.reshape(lut, {shape_numel(lut_shape)}), "w_lut_flat");
  std::vector<std::int32_t> codes(kO * kC);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = code_at(static_cast<std::int64_t>(i));
  const Shape tdims = ios16 ? Shape{} : Shape{tables, 1, 1, 1};
  const ir::Value idx = b.name(b.constant(lut_flat_indices({kO, kC, 1, 1}, tdims, 16, codes)), "w_indices");
  const ir::Value w = b.name(b.gather(flat, idx), "w");
  b.output(b.name(b.conv(x, w), "y"));
  return b.finish();
}

// x through a conv on a 4-bit dequantize: int4 with scales per 8 input channels, or uint4 with
// offsets, integer or fp16.
enum class Offset { none, uint4, fp16 };
ir::Graph int4_conv(Offset offset) {
  ir::Builder b("main");
  Rng rng(6);
  const ir::Value x = b.input("x", DType::f16, {1, kC, 1, kS});
  const bool is_signed = offset == Offset::none;
  Tensor q(is_signed ? DType::i8 : DType::u8, {kO, kC, 1, 1});
  for (std::int64_t i = 0; i < q.numel(); ++i) {
    if (is_signed) q.data<std::int8_t>()[i] = static_cast<std::int8_t>(code_at(i) - 8);
    else q.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(code_at(i));
  }
  std::vector<ir::Value> in{b.name(b.constant(q), "w_data"),
                            b.name(b.constant(random_f16(rng, {kO, kC / 8, 1, 1}, 0.01f, 0.05f)), "w_scale")};
  if (offset == Offset::uint4) {
    Tensor z(DType::u8, {kO, kC / 8, 1, 1});
    for (std::int64_t i = 0; i < z.numel(); ++i) z.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i % 16);
    in.push_back(b.name(b.constant(z), "w_offset"));
  } else if (offset == Offset::fp16) {
    in.push_back(b.name(b.constant(random_f16(rng, {kO, kC / 8, 1, 1}, 0.0f, 15.0f)), "w_offset"));
  }
  const ir::Value w = b.name(b.op(ir::Op::dequantize, in, {{"bits", std::int64_t{4}}}), "w");
  b.output(b.name(b.conv(x, w), "y"));
  return b.finish();
}

struct Written {
  MilProgram program;
  ir::Graph back;
};

// Written into `dir` and parsed back; the parse is the same IR (printed alike), writes the same
// text and bytes again and computes the same bits.
Written round_trip_4bit(const ir::Graph& g, MilDialect dialect, const std::string& dir) {
  MilWriteOptions o;
  o.dialect = dialect;
  MilProgram p = write_mil(g, o);
  write_model_folder(p, dir, o);
  ir::Graph back = parse_mil(p.text, "model.mil", dir);
  EXPECT_EQ(ir::print_graph(back), ir::print_graph(g)) << p.text;
  const MilProgram again = write_mil(back, o);
  EXPECT_EQ(again.text, p.text);
  EXPECT_EQ(again.weights.bytes(), p.weights.bytes());
  const TensorMap bind = testing::random_inputs(g, 3);
  const std::vector<Tensor> want = testing::run_f16(g, bind), got = testing::run_f16(back, bind);
  EXPECT_TRUE(testing::same_bits(want[0], got[0]));
  return {std::move(p), std::move(back)};
}

// The offset a const line gives its BLOBFILE.
std::uint64_t blob_offset_of(const std::string& text, const std::string& var) {
  const std::size_t line = text.find(" " + var + " = const()");
  EXPECT_NE(line, std::string::npos) << var;
  const std::size_t at = text.find("offset = uint64(", line) + 16;
  return std::stoull(text.substr(at));
}

// Two codes a byte, the first in the low nibble (docs/ane/FORMATS.md).
std::vector<std::byte> nibbles(const std::vector<std::int32_t>& v) {
  std::vector<std::byte> b((v.size() + 1) / 2, std::byte{0});
  for (std::size_t i = 0; i < v.size(); ++i) b[i / 2] |= std::byte((v[i] & 0xf) << (i % 2 ? 4 : 0));
  return b;
}

TEST(Mil4Bit, GroupedLutRoundTripsInTheIos18Form) {
  testing_util::TempDir dir;
  const Written w = round_trip_4bit(lut_conv(4), MilDialect::ios18, dir.path());
  const std::string& t = w.program.text;
  EXPECT_NE(t.find("tensor<uint4, [16, 32, 1, 1]> w_indices = const()"), std::string::npos) << t;
  EXPECT_NE(t.find("tensor<fp16, [4, 1, 1, 1, 16, 1]> w_lut = const()"), std::string::npos) << t;
  EXPECT_NE(t.find("tensor<fp16, [16, 32, 1, 1]> w = constexpr_lut_to_dense(indices = w_indices, lut = w_lut)[name = string(\"w\")];"),
            std::string::npos) << t;
  EXPECT_EQ(t.find("w_lut_flat"), std::string::npos);  // the IR's layout alone
  // The codes as uint4 nibbles, type code 11, the size of 512 nibbles.
  const WeightBlobReader r = WeightBlobReader::from_bytes(w.program.weights.bytes(), "weight.bin");
  const BlobRecord& rec = r.at(blob_offset_of(t, "w_indices"));
  EXPECT_EQ(rec.dtype, BlobDType::uint4);
  std::vector<std::int32_t> codes(kO * kC);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = code_at(static_cast<std::int64_t>(i));
  const std::vector<std::byte> want = nibbles(codes);
  ASSERT_EQ(rec.data.size(), want.size());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), rec.data.begin()));
  EXPECT_EQ(r.at(blob_offset_of(t, "w_lut")).dtype, BlobDType::fp16);
}

TEST(Mil4Bit, OneLutRoundTripsInBothForms) {
  // The iOS16 form: its arguments in the attribute block, the codes packed into uint8 bytes.
  testing_util::TempDir d16;
  const Written w16 = round_trip_4bit(lut_conv(0), MilDialect::ios16, d16.path());
  EXPECT_NE(w16.program.text.find("w = constexpr_lut_to_dense()[indices = tensor<uint8, [256]>(BLOBFILE(path = "
                                  "tensor<string, []>(\"@model_path/weights/weight.bin\"), offset = tensor<uint64, []>("),
            std::string::npos)
      << w16.program.text;
  EXPECT_NE(w16.program.text.find("lut = tensor<fp16, [16]>(BLOBFILE("), std::string::npos);
  EXPECT_NE(w16.program.text.find("shape = tensor<uint32, [4]>([16, 32, 1, 1])];"), std::string::npos);
  // One file per tensor, as M1/M2 take them: named after the LUT's consts.
  testing_util::TempDir d1;
  MilWriteOptions o;
  o.dialect = MilDialect::ios16;
  o.one_file_per_tensor = true;
  const MilProgram p = write_mil(lut_conv(0), o);
  write_model_folder(p, d1.path(), o);
  EXPECT_NE(p.text.find("@model_path/weights/w_indices.bin"), std::string::npos) << p.text;
  EXPECT_EQ(write_mil(parse_mil(p.text, "model.mil", d1.path()), o).text, p.text);
  // The iOS18 dialect writes the one table in its own form, [1, 1, 1, 1, 16, 1].
  testing_util::TempDir d18;
  const ir::Graph g = lut_conv(0);
  const MilProgram p18 = write_mil(g);
  write_model_folder(p18, d18.path());
  EXPECT_NE(p18.text.find("tensor<fp16, [1, 1, 1, 1, 16, 1]> w_lut"), std::string::npos) << p18.text;
  const ir::Graph back = parse_mil(p18.text, "model.mil", d18.path());
  const TensorMap bind = testing::random_inputs(g, 4);
  EXPECT_TRUE(testing::same_bits(testing::run_f16(g, bind)[0], testing::run_f16(back, bind)[0]));
  EXPECT_EQ(write_mil(back).text, p18.text);
}

TEST(Mil4Bit, Int4AndUint4DataRoundTrip) {
  for (const Offset off : {Offset::none, Offset::uint4, Offset::fp16}) {
    testing_util::TempDir dir;
    const Written w = round_trip_4bit(int4_conv(off), MilDialect::ios18, dir.path());
    const std::string& t = w.program.text;
    const std::string data_type = off == Offset::none ? "int4" : "uint4";
    EXPECT_NE(t.find("tensor<" + data_type + ", [16, 32, 1, 1]> w_data = const()"), std::string::npos) << t;
    if (off == Offset::uint4) {
      EXPECT_NE(t.find("tensor<uint4, [16, 4, 1, 1]> w_offset = const()"), std::string::npos) << t;
    }
    EXPECT_NE(t.find("constexpr_blockwise_shift_scale(data = w_data, "), std::string::npos) << t;
    const WeightBlobReader r = WeightBlobReader::from_bytes(w.program.weights.bytes(), "weight.bin");
    const BlobRecord& rec = r.at(blob_offset_of(t, "w_data"));
    EXPECT_EQ(rec.dtype, off == Offset::none ? BlobDType::int4 : BlobDType::uint4);
    std::vector<std::int32_t> v(kO * kC);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = code_at(static_cast<std::int64_t>(i)) - (off == Offset::none ? 8 : 0);
    const std::vector<std::byte> want = nibbles(v);
    ASSERT_EQ(rec.data.size(), want.size());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), rec.data.begin()));
    EXPECT_EQ(w.back.node(*w.back.find("w")).attr_int("bits"), 4);
  }
}

// What the writer refuses, naming the node and the problem.
TEST(Mil4Bit, TheWriterRefusesWhatNoMilFormHolds) {
  // An index outside its own table's entries.
  ir::Graph g = lut_conv(4);
  Tensor& idx = std::get<Tensor>(g.node(*g.find("w_indices")).attrs[0]);
  idx.data<std::int32_t>()[3] = 40;  // element 3 is in table 0: [0, 16)
  EXPECT_NE(error_of([&] { write_mil(g); }).find("%w (gather) (constexpr_lut_to_dense): index 40 of element 3 is outside its LUT's entries [0, 16)"),
            std::string::npos)
      << error_of([&] { write_mil(g); });
  // Grouped tables and 4-bit data have no iOS16 form.
  MilWriteOptions o16;
  o16.dialect = MilDialect::ios16;
  EXPECT_NE(error_of([&] { write_mil(lut_conv(4), o16); }).find("is the iOS18 form; the ios16 dialect takes one LUT per weight"),
            std::string::npos);
  EXPECT_NE(error_of([&] { write_mil(int4_conv(Offset::none), o16); }).find("int4 and uint4 data are an iOS18 form"),
            std::string::npos);
  // An int4 value out of range.
  ir::Graph h = int4_conv(Offset::none);
  std::get<Tensor>(h.node(*h.find("w_data")).attrs[0]).data<std::int8_t>()[5] = 9;
  EXPECT_NE(error_of([&] { write_mil(h); }).find("%w_data (const): int4 value 9 at element 5 is outside [-8, 7]"), std::string::npos)
      << error_of([&] { write_mil(h); });
}

std::string program(const std::string& body) {
  return "program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n"
         "    func main<ios18>(tensor<fp16, [1, 32, 1, 32]> x) {\n" + body +
         "        tensor<fp16, [1, 16, 1, 32]> y = conv(weight = w, x = x)[name = string(\"y\")];\n"
         "    } -> (y);\n}\n";
}

// What the parser refuses, at the op, saying why.
TEST(Mil4Bit, TheParserRefusesMalformedConstexprOps) {
  const auto parse_error = [](const std::string& body) { return error_of([&] { parse_mil(program(body), "m.mil"); }); };
  const std::string idx = "        tensor<uint4, [16, 32, 1, 1]> i = const()[name = string(\"i\"), val = tensor<uint4, [16, 32, 1, 1]>([" ;
  std::string zeros;
  for (int k = 0; k < 16 * 32; ++k) zeros += k ? ", 0" : "0";
  const std::string indices = idx + zeros + "])];\n";
  const auto lut = [](const std::string& shape, int n) {
    std::string v;
    for (int k = 0; k < n; ++k) v += k ? ", 0.5" : "0.5";
    return "        tensor<fp16, " + shape + "> l = const()[name = string(\"l\"), val = tensor<fp16, " + shape + ">([" + v + "])];\n";
  };
  const std::string op = "        tensor<fp16, [16, 32, 1, 1]> w = constexpr_lut_to_dense(indices = i, lut = l)[name = string(\"w\")];\n";
  EXPECT_NE(parse_error(indices + lut("[1, 1, 1, 1, 15, 1]", 15) + op)
                .find("constexpr_lut_to_dense w: the LUT has 15 entries per table; uint4 indices need 16"),
            std::string::npos);
  EXPECT_NE(parse_error(indices + lut("[3, 1, 1, 1, 16, 1]", 48) + op)
                .find("the LUT's 3 tables along axis 0 do not divide the indices' 16"),
            std::string::npos);
  EXPECT_NE(parse_error(indices + lut("[1, 1, 1, 1, 16, 2]", 32) + op).find("vector palettization (VECTOR_SIZE 2) has no IR form"),
            std::string::npos);
  // The iOS16 form: 255 bytes cannot hold 512 4-bit codes.
  std::string bytes;
  for (int k = 0; k < 255; ++k) bytes += k ? ", 17" : "17";
  std::string v16;
  for (int k = 0; k < 16; ++k) v16 += k ? ", 0.25" : "0.25";
  EXPECT_NE(parse_error("        tensor<fp16, [16, 32, 1, 1]> w = constexpr_lut_to_dense()[indices = tensor<uint8, [255]>([" + bytes +
                        "]), lut = tensor<fp16, [16]>([" + v16 + "]), name = string(\"w\"), shape = tensor<uint32, [4]>([16, 32, 1, 1])];\n")
                .find("255 bytes of packed indices; 512 4-bit indices of [16, 32, 1, 1] take 256"),
            std::string::npos);
  // A blockwise scale whose blocks do not tile the data.
  const std::string data = "        tensor<int4, [16, 32, 1, 1]> q = const()[name = string(\"q\"), val = tensor<int4, [16, 32, 1, 1]>([" + zeros + "])];\n";
  std::string s;
  for (int k = 0; k < 16 * 3; ++k) s += k ? ", 0.5" : "0.5";
  EXPECT_NE(parse_error(data + "        tensor<fp16, [16, 3, 1, 1]> s = const()[name = string(\"s\"), val = tensor<fp16, [16, 3, 1, 1]>([" + s +
                        "])];\n        tensor<fp16, [16, 32, 1, 1]> w = constexpr_blockwise_shift_scale(data = q, scale = s)[name = string(\"w\")];\n")
                .find("constexpr_blockwise_shift_scale w: the scale's dim 1 (3) does not divide the data's [16, 32, 1, 1]: blocks must tile the data"),
            std::string::npos);
  // An int4 literal out of range, and an integer offset of another type than the data's.
  EXPECT_NE(parse_error("        tensor<int4, [2]> q = const()[name = string(\"q\"), val = tensor<int4, [2]>([1, 9])];\n")
                .find("9 is out of range for int4"),
            std::string::npos);
  std::string s4;
  for (int k = 0; k < 16 * 4; ++k) s4 += k ? ", 0.5" : "0.5";
  std::string z4;
  for (int k = 0; k < 16 * 4; ++k) z4 += k ? ", 1" : "1";
  const std::string uq = "        tensor<uint4, [16, 32, 1, 1]> q = const()[name = string(\"q\"), val = tensor<uint4, [16, 32, 1, 1]>([" + zeros + "])];\n";
  EXPECT_NE(parse_error(uq + "        tensor<fp16, [16, 4, 1, 1]> s = const()[name = string(\"s\"), val = tensor<fp16, [16, 4, 1, 1]>([" + s4 +
                        "])];\n        tensor<uint8, [16, 4, 1, 1]> z = const()[name = string(\"z\"), val = tensor<uint8, [16, 4, 1, 1]>([" + z4 +
                        "])];\n        tensor<fp16, [16, 32, 1, 1]> w = constexpr_blockwise_shift_scale(data = q, offset = z, scale = s)[name = string(\"w\")];\n")
                .find("the offset is uint8, the data uint4: an integer offset has the data's type"),
            std::string::npos);
}

}  // namespace
}  // namespace orion::compile
