// The MIL writer against expected texts written by hand from docs/ane/FORMATS.md's rules
// (headers copied from there, named consts for every scalar or list argument, alphabetical
// arguments, hex floats, BLOBFILE naming the record at 64), one per dialect.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compile/mil/mil_writer.h"
#include "compile/blob/weight_blob_reader.h"
#include "compile/mil_test_util.h"

namespace orion::compile {
namespace {

using ir::Op;
using testing::error_of;

// x -> conv with a blob weight -> add an inline const -> softmax -> slice -> concat ->
// reduce_mean -> clip; outputs q and z. The conv is named with a '.', which MIL names lack.
ir::Graph small_graph() {
  ir::Builder b("main");
  const DType h = DType::f16;
  const ir::Value x = b.input("x", h, {1, 4, 1, 8});
  std::vector<float> wv(24);
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i) - 11.5f;
  const ir::Value w = b.name(b.constant(Tensor::from_floats({6, 4, 1, 1}, wv).to(h)), "w");
  const ir::Value bias = b.name(
      b.constant(Tensor::from_floats({1, 6, 1, 1}, std::vector<float>{0.5f, -1, 2, 0.125f, 0, -0.0f}).to(h)), "b");
  const ir::Value y = b.name(b.conv(x, w), "blk.y");
  const ir::Value z = b.name(b.add(y, bias), "z");
  const ir::Value s = b.name(b.softmax(z), "s");
  const ir::Value hh = b.name(b.slice(s, {0, 0, 0, 0}, {1, 3, 1, 8}), "h");
  const ir::Value c = b.name(b.concat({hh, hh}, 1), "c");
  const ir::Value r = b.name(b.reduce_mean(c, {1}, true), "r");
  const ir::Value q = b.name(b.clamp(r, -0.5, 6), "q");
  b.output(q);
  b.output(z);
  return b.finish();
}

const char* const kIos18 = R"(program(1.3)
[buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"}, {"coremltools-component-milinternal", ""}, {"coremltools-version", "9.0"}})]
{
    func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x) {
            tensor<fp16, [6, 4, 1, 1]> w = const()[name = string("w"), val = tensor<fp16, [6, 4, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
            tensor<fp16, [1, 6, 1, 1]> b = const()[name = string("b"), val = tensor<fp16, [1, 6, 1, 1]>([0x1.0p-1, -0x1.0p+0, 0x1.0p+1, 0x1.0p-3, 0x0.0p+0, -0x0.0p+0])];
            tensor<int32, [2]> blk_y_dilations = const()[name = string("blk_y_dilations"), val = tensor<int32, [2]>([1, 1])];
            int32 blk_y_groups = const()[name = string("blk_y_groups"), val = int32(1)];
            tensor<int32, [4]> blk_y_pad = const()[name = string("blk_y_pad"), val = tensor<int32, [4]>([0, 0, 0, 0])];
            string blk_y_pad_type = const()[name = string("blk_y_pad_type"), val = string("valid")];
            tensor<int32, [2]> blk_y_strides = const()[name = string("blk_y_strides"), val = tensor<int32, [2]>([1, 1])];
            tensor<fp16, [1, 6, 1, 8]> blk_y = conv(dilations = blk_y_dilations, groups = blk_y_groups, pad = blk_y_pad, pad_type = blk_y_pad_type, strides = blk_y_strides, weight = w, x = x)[name = string("blk_y")];
            tensor<fp16, [1, 6, 1, 8]> z = add(x = blk_y, y = b)[name = string("z")];
            int32 s_axis = const()[name = string("s_axis"), val = int32(-1)];
            tensor<fp16, [1, 6, 1, 8]> s = softmax(axis = s_axis, x = z)[name = string("s")];
            tensor<int32, [4]> h_begin = const()[name = string("h_begin"), val = tensor<int32, [4]>([0, 0, 0, 0])];
            tensor<int32, [4]> h_size = const()[name = string("h_size"), val = tensor<int32, [4]>([1, 3, 1, 8])];
            tensor<fp16, [1, 3, 1, 8]> h = slice_by_size(begin = h_begin, size = h_size, x = s)[name = string("h")];
            int32 c_axis = const()[name = string("c_axis"), val = int32(1)];
            bool c_interleave = const()[name = string("c_interleave"), val = bool(false)];
            tensor<fp16, [1, 6, 1, 8]> c = concat(axis = c_axis, interleave = c_interleave, values = (h, h))[name = string("c")];
            tensor<int32, [1]> r_axes = const()[name = string("r_axes"), val = tensor<int32, [1]>([1])];
            bool r_keep_dims = const()[name = string("r_keep_dims"), val = bool(true)];
            tensor<fp16, [1, 1, 1, 8]> r = reduce_mean(axes = r_axes, keep_dims = r_keep_dims, x = c)[name = string("r")];
            fp16 q_alpha = const()[name = string("q_alpha"), val = fp16(-0x1.0p-1)];
            fp16 q_beta = const()[name = string("q_beta"), val = fp16(0x1.8p+2)];
            tensor<fp16, [1, 1, 1, 8]> q = clip(alpha = q_alpha, beta = q_beta, x = r)[name = string("q")];
        } -> (q, z);
}
)";

const char* const kIos16 = R"(program(1.0)
[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{"coremlc-version", "3505.4.1"}})]
{
    func main<ios16>(tensor<fp16, [1, 4, 1, 8]> x) {
            tensor<fp16, [6, 4, 1, 1]> w = const()[name = tensor<string, []>("w"), val = tensor<fp16, [6, 4, 1, 1]>(BLOBFILE(path = tensor<string, []>("@model_path/weights/weight.bin"), offset = tensor<uint64, []>(64)))];
            tensor<fp16, [1, 6, 1, 1]> b = const()[name = tensor<string, []>("b"), val = tensor<fp16, [1, 6, 1, 1]>([0x1.0p-1, -0x1.0p+0, 0x1.0p+1, 0x1.0p-3, 0x0.0p+0, -0x0.0p+0])];
            tensor<int32, [2]> blk_y_dilations = const()[name = tensor<string, []>("blk_y_dilations"), val = tensor<int32, [2]>([1, 1])];
            tensor<int32, []> blk_y_groups = const()[name = tensor<string, []>("blk_y_groups"), val = tensor<int32, []>(1)];
            tensor<int32, [4]> blk_y_pad = const()[name = tensor<string, []>("blk_y_pad"), val = tensor<int32, [4]>([0, 0, 0, 0])];
            tensor<string, []> blk_y_pad_type = const()[name = tensor<string, []>("blk_y_pad_type"), val = tensor<string, []>("valid")];
            tensor<int32, [2]> blk_y_strides = const()[name = tensor<string, []>("blk_y_strides"), val = tensor<int32, [2]>([1, 1])];
            tensor<fp16, [1, 6, 1, 8]> blk_y = conv(dilations = blk_y_dilations, groups = blk_y_groups, pad = blk_y_pad, pad_type = blk_y_pad_type, strides = blk_y_strides, weight = w, x = x)[name = tensor<string, []>("blk_y")];
            tensor<fp16, [1, 6, 1, 8]> z = add(x = blk_y, y = b)[name = tensor<string, []>("z")];
            tensor<int32, []> s_axis = const()[name = tensor<string, []>("s_axis"), val = tensor<int32, []>(-1)];
            tensor<fp16, [1, 6, 1, 8]> s = softmax(axis = s_axis, x = z)[name = tensor<string, []>("s")];
            tensor<int32, [4]> h_begin = const()[name = tensor<string, []>("h_begin"), val = tensor<int32, [4]>([0, 0, 0, 0])];
            tensor<int32, [4]> h_size = const()[name = tensor<string, []>("h_size"), val = tensor<int32, [4]>([1, 3, 1, 8])];
            tensor<fp16, [1, 3, 1, 8]> h = slice_by_size(begin = h_begin, size = h_size, x = s)[name = tensor<string, []>("h")];
            tensor<int32, []> c_axis = const()[name = tensor<string, []>("c_axis"), val = tensor<int32, []>(1)];
            tensor<bool, []> c_interleave = const()[name = tensor<string, []>("c_interleave"), val = tensor<bool, []>(false)];
            tensor<fp16, [1, 6, 1, 8]> c = concat(axis = c_axis, interleave = c_interleave, values = (h, h))[name = tensor<string, []>("c")];
            tensor<int32, [1]> r_axes = const()[name = tensor<string, []>("r_axes"), val = tensor<int32, [1]>([1])];
            tensor<bool, []> r_keep_dims = const()[name = tensor<string, []>("r_keep_dims"), val = tensor<bool, []>(true)];
            tensor<fp16, [1, 1, 1, 8]> r = reduce_mean(axes = r_axes, keep_dims = r_keep_dims, x = c)[name = tensor<string, []>("r")];
            tensor<fp16, []> q_alpha = const()[name = tensor<string, []>("q_alpha"), val = tensor<fp16, []>(-0x1.0p-1)];
            tensor<fp16, []> q_beta = const()[name = tensor<string, []>("q_beta"), val = tensor<fp16, []>(0x1.8p+2)];
            tensor<fp16, [1, 1, 1, 8]> q = clip(alpha = q_alpha, beta = q_beta, x = r)[name = tensor<string, []>("q")];
        } -> (q, z);
}
)";

void expect_same_lines(const std::string& got, const std::string& want) {
  std::size_t a = 0, b = 0;
  for (int line = 1; a < got.size() || b < want.size(); ++line) {
    const std::size_t ea = got.find('\n', a), eb = want.find('\n', b);
    const std::string la = got.substr(a, ea - a), lb = want.substr(b, eb - b);
    ASSERT_EQ(la, lb) << "line " << line;
    if (ea == std::string::npos || eb == std::string::npos) {
      ASSERT_EQ(ea, eb) << "line " << line;
      break;
    }
    a = ea + 1;
    b = eb + 1;
  }
  EXPECT_EQ(got, want);
}

TEST(MilWriter, SmallGraphIos18) {
  const MilProgram p = write_mil(small_graph());
  expect_same_lines(p.text, kIos18);
}

TEST(MilWriter, SmallGraphIos16) {
  const MilProgram p = write_mil(small_graph(), {MilDialect::ios16});
  expect_same_lines(p.text, kIos16);
}

TEST(MilWriter, WeightBlobHoldsTheLargeConstAsFp16) {
  const MilProgram p = write_mil(small_graph());
  ASSERT_EQ(p.weights.count(), 1u);
  const WeightBlobReader r = WeightBlobReader::from_bytes(p.weights.bytes(), "weight.bin");
  const BlobRecord& rec = r.at(64);
  EXPECT_EQ(rec.dtype, BlobDType::fp16);
  ASSERT_EQ(rec.size, 48u);
  EXPECT_EQ(p.weights.bytes().size(), 128u + 48u);
  for (std::size_t i = 0; i < 24; ++i) {
    const auto lo = std::to_integer<unsigned>(rec.data[2 * i]), hi = std::to_integer<unsigned>(rec.data[2 * i + 1]);
    EXPECT_EQ(half_to_float(static_cast<std::uint16_t>(lo | hi << 8)), static_cast<float>(i) - 11.5f) << i;
  }
}

TEST(MilWriter, DeterministicAndInlineLimit) {
  const ir::Graph g = small_graph();
  EXPECT_EQ(write_mil(g).text, write_mil(g).text);
  EXPECT_EQ(write_mil(g).weights.bytes(), write_mil(g).weights.bytes());
  MilWriteOptions o;
  o.max_inline_elements = 100;  // the 24-value weight is now inline
  const MilProgram p = write_mil(g, o);
  EXPECT_EQ(p.weights.count(), 0u);
  EXPECT_NE(p.text.find("val = tensor<fp16, [6, 4, 1, 1]>([-0x1.7p+3, -0x1.5p+3, "), std::string::npos);
  o.max_inline_elements = 5;  // the 6-value bias goes to the blob too, after the weight
  const MilProgram q = write_mil(g, o);
  EXPECT_EQ(q.weights.count(), 2u);
  EXPECT_NE(q.text.find("offset = uint64(192)"), std::string::npos);  // 128 + 48 -> 176, aligned
}

TEST(MilWriter, NameCollisionsAndKeywords) {
  ir::Builder b("main");
  const ir::Value x = b.input("tensor", DType::f16, {1, 2});
  const ir::Value a = b.name(b.relu(x), "a.b");
  const ir::Value c = b.name(b.relu(a), "a_b");
  const ir::Value s = b.name(b.softmax(c), "s");
  b.name(b.relu(s), "s_axis");  // takes the name the softmax's axis const would get
  b.output(ir::Value{4});
  const std::string t = write_mil(b.finish()).text;
  EXPECT_NE(t.find("(tensor<fp16, [1, 2]> tensor_)"), std::string::npos) << t;
  EXPECT_NE(t.find("tensor<fp16, [1, 2]> a_b = relu(x = tensor_)"), std::string::npos) << t;
  EXPECT_NE(t.find("tensor<fp16, [1, 2]> a_b_1 = relu(x = a_b)"), std::string::npos) << t;
  EXPECT_NE(t.find("int32 s_axis_1 = const()[name = string(\"s_axis_1\"), val = int32(-1)];"), std::string::npos) << t;
  EXPECT_NE(t.find("s_axis = relu(x = s)"), std::string::npos) << t;
}

TEST(MilWriter, OpsWithoutMilFormMustBeLegalised) {
  for (Op op : {Op::gelu, Op::silu, Op::neg}) {
    ir::Builder b("main");
    b.output(b.name(b.op(op, {b.input("x", DType::f16, {1, 4})}), "act"));
    const std::string name(ir::op_info(op).name);
    EXPECT_EQ(error_of([&] { write_mil(b.finish()); }),
              "%act (" + name + "): op " + name + " has no MIL form; it must be legalised first (rewritten into ops the ANE runs)");
  }
  {
    ir::Builder b("main");
    const ir::Value x = b.input("x", DType::f16, {1, 4});
    const ir::Value gamma = b.param("g", DType::f16, {4});
    const ir::Value beta = b.param("be", DType::f16, {4});
    b.output(b.name(b.layer_norm(x, gamma, beta), "ln"));
    EXPECT_EQ(error_of([&] { write_mil(b.finish()); }),
              "%g (param): a param has no MIL form: the ANE bakes weights in, so it must be a const (or an "
              "input) before the graph is written as MIL");
  }
  {
    ir::Builder b("main");
    b.output(b.input("x", DType::f16, {1, 4}));
    EXPECT_EQ(error_of([&] { write_mil(b.finish()); }),
              "%x (input): a graph output must be produced in the body; the ANE rejects returning an input");
  }
  {
    ir::Builder b("main");
    b.output(b.name(b.relu(b.input("x", DType::bf16, {1, 4})), "r"));
    EXPECT_EQ(error_of([&] { write_mil(b.finish()); }), "%x (input): dtype bf16 has no MIL spelling");
  }
}

TEST(MilWriter, FloatSpelling) {
  EXPECT_EQ(mil_float(0.125), "0x1.0p-3");
  EXPECT_EQ(mil_float(-1.5), "-0x1.8p+0");
  EXPECT_EQ(mil_float(0.0), "0x0.0p+0");
  EXPECT_EQ(mil_float(-0.0), "-0x0.0p+0");
  EXPECT_EQ(mil_float(65504.0), "0x1.ffcp+15");
  EXPECT_EQ(mil_float(std::ldexp(1.0, -24)), "0x1.0p-24");  // smallest fp16 subnormal
  EXPECT_EQ(mil_float(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(mil_float(-std::numeric_limits<double>::infinity()), "-inf");
}

}  // namespace
}  // namespace orion::compile
