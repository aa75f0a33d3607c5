// The MIL parser: docs/ane/FORMATS.md's example program, the spellings hand-written and compiled files
// use, errors at exact lines and columns, and thousands of mutated texts that must give an
// orion::Error, never a crash.
#include <gtest/gtest.h>

#include "compile/mil/mil_parser.h"
#include "compile/mil/mil_to_ir.h"
#include "compile/mil/mil_writer.h"
#include "compile/blob/weight_blob_writer.h"
#include "compile/mil_test_util.h"
#include "core/testing_temp_dir.h"

namespace orion::compile {
namespace {

using testing::error_of;

// docs/ane/FORMATS.md's program ("Two dialects"), verbatim.
const char* const kFormatsExample = R"(program(1.3)
[buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"}, {"coremltools-component-milinternal", ""}, {"coremltools-version", "9.0"}})]
{
    func main<ios18>(tensor<fp16, [1, 768, 1, 64]> x) {
            tensor<fp16, [768, 768, 1, 1]> W = const()[name = string("W"), val = tensor<fp16, [768, 768, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
            string pt = const()[name = string("pt"), val = string("valid")];
            tensor<int32, [2]> st = const()[name = string("st"), val = tensor<int32, [2]>([1, 1])];
            tensor<int32, [4]> pd = const()[name = string("pd"), val = tensor<int32, [4]>([0, 0, 0, 0])];
            tensor<int32, [2]> dl = const()[name = string("dl"), val = tensor<int32, [2]>([1, 1])];
            int32 gr = const()[name = string("gr"), val = int32(1)];
            tensor<fp16, [1, 768, 1, 64]> y = conv(dilations = dl, groups = gr, pad = pd, pad_type = pt, strides = st, weight = W, x = x)[name = string("y")];
        } -> (y);
}
)";

TEST(MilParser, FormatsExampleParsesAndRuns) {
  testing_util::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/weights");
  // W = 768 x 768 fp16: row c holds (c % 7 - 3) / 8 in column c and 0 elsewhere (diagonal).
  std::vector<std::uint16_t> w(768 * 768, 0);
  for (std::size_t c = 0; c < 768; ++c) w[c * 768 + c] = float_to_half(static_cast<float>(static_cast<int>(c % 7) - 3) / 8);
  WeightBlobWriter bw;
  ASSERT_EQ(bw.add_fp16(w), 64u);
  bw.write(dir.path() + "/weights/weight.bin");

  const ir::Graph g = parse_mil(kFormatsExample, "model.mil", dir.path());
  ASSERT_EQ(g.size(), 3);  // x, W, y: the five parameter consts are folded
  const ir::Node& y = g.node(2);
  EXPECT_EQ(y.op, ir::Op::conv);
  EXPECT_EQ(y.name, "y");
  EXPECT_EQ(y.type.str(), "f16[1, 768, 1, 64]");
  EXPECT_EQ(y.attr_ints("pads"), (std::vector<std::int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(y.attr_int("groups"), 1);
  EXPECT_EQ(g.outputs(), std::vector<ir::ValueId>{2});

  // A diagonal weight scales channel c by (c % 7 - 3) / 8, exactly in fp16.
  TensorMap bind = testing::random_inputs(g, 5);
  const std::vector<Tensor> out = testing::run_f16(g, bind);
  const std::vector<float> xv = bind["x"].to_floats(), yv = out[0].to_floats();
  for (std::size_t c = 0; c < 768; c += 37)
    for (std::size_t s = 0; s < 64; s += 9) {
      const float xs = half_to_float(float_to_half(xv[c * 64 + s]));
      EXPECT_EQ(yv[c * 64 + s], half_to_float(float_to_half(xs * (static_cast<float>(static_cast<int>(c % 7) - 3) / 8))));
    }
}

// Spellings from hand-written programs: no spaces, decimals, exponents and integer floats,
// arguments in any order, a missing attribute block, omitted optional arguments (defaults),
// inline literal arguments, a nested list, the verbose ios16 scalars, and a blob in a file of
// its own under a sub-folder.
const char* const kHandWritten =
    "program(1.0)\n"
    "[buildInfo=dict<tensor<string,[]>,tensor<string,[]>>({{\"coremlc-version\",\"3505.4.1\"}})]\n"
    "{func main<ios16>(tensor<fp16,[1,2,1,4]>x,tensor<fp16,[1,2,1,4]>y_in){\n"
    "tensor<fp16,[2,2,1,1]>wq=const()[name=tensor<string,[]>(\"wq\"),val=tensor<fp16,[2,2,1,1]>(BLOBFILE(offset=tensor<uint64,[]>(64),path=tensor<string,[]>(\"@model_path/layer3/wq.bin\")))];\n"
    "tensor<fp16,[1,2,1,4]>q=conv(x=x,weight=wq);\n"
    "tensor<fp16,[]>eps=const()[val=tensor<fp16,[]>(0.000010),name=tensor<string,[]>(\"eps\")];\n"
    "tensor<fp16,[]>e2=const()[name=tensor<string,[]>(\"e2\"),val=tensor<fp16,[]>(1e-05)];\n"
    "tensor<fp16,[]>m1=const()[name=tensor<string,[]>(\"m1\"),val=tensor<fp16,[]>(-1)];\n"
    "tensor<fp16,[1,2,1,1]>k=const()[name=tensor<string,[]>(\"k\"),val=tensor<fp16,[1,2,1,1]>([[[[0x1p-1]],[[-0x1.8p+0]]]])];\n"
    "tensor<fp16,[1,2,1,4]>a=add(y=eps,x=q)[name=tensor<string,[]>(\"different\")];\n"
    "tensor<fp16,[1,2,1,4]>b=mul(x=a,y=k);\n"
    "tensor<fp16,[1,2,1,4]>c=sub(x=b,y=e2);\n"
    "tensor<fp16,[1,2,1,4]>d=mul(x=c,y=m1);\n"
    "tensor<fp16,[1,2,1,4]>sm=softmax(x=d);\n"
    "tensor<fp16,[1,2,4,1]>t=transpose(perm=tensor<int32,[4]>([0,1,3,2]),x=sm);\n"
    "tensor<fp16,[1,2,1,1]>mm=matmul(y=y_in,x=y_in,transpose_y=tensor<bool,[]>(true));\n"
    "}->(t,mm);}\n";

TEST(MilParser, HandWrittenSpellings) {
  testing_util::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/layer3");
  WeightBlobWriter bw;
  bw.add_fp16(std::vector<std::uint16_t>{0x3c00, 0, 0, 0x4000});  // [[1, 0], [0, 2]]
  bw.write(dir.path() + "/layer3/wq.bin");
  const ir::Graph g = parse_mil(kHandWritten, "hand.mil", dir.path());
  const auto node = [&](const char* n) -> const ir::Node& { return g.node(*g.find(n)); };
  EXPECT_EQ(node("q").attr_ints("strides"), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(node("sm").attr_int("axis"), -1);
  EXPECT_EQ(node("t").attr_ints("perm"), (std::vector<std::int64_t>{0, 1, 3, 2}));
  EXPECT_FALSE(node("mm").attr_bool("transpose_x"));
  EXPECT_TRUE(node("mm").attr_bool("transpose_y"));
  EXPECT_EQ(node("eps").attr<Tensor>("value").data<std::uint16_t>()[0], float_to_half(0.00001f));
  EXPECT_EQ(node("e2").attr<Tensor>("value").data<std::uint16_t>()[0], float_to_half(1e-5f));
  EXPECT_EQ(node("m1").attr<Tensor>("value").data<std::uint16_t>()[0], 0xbc00);
  const Tensor k = node("k").attr<Tensor>("value");
  EXPECT_EQ(k.to_floats(), (std::vector<float>{0.5f, -1.5f}));
  const Tensor wq = node("wq").attr<Tensor>("value");
  EXPECT_EQ(wq.to_floats(), (std::vector<float>{1, 0, 0, 2}));
  EXPECT_EQ(g.outputs().size(), 2u);
}

TEST(MilParser, MultiOutputSplitParsesButHasNoIrForm) {
  const std::string head = std::string("program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n") +
                           "func main<ios18>(tensor<fp16, [1, 4]> x) {\n" +
                           "int32 ax = const()[name = string(\"ax\"), val = int32(1)];\n";
  for (const std::string outs : {"tensor<fp16, [1, 2]> a, tensor<fp16, [1, 2]> b",
                                 "(tensor<fp16, [1, 2]> a, tensor<fp16, [1, 2]> b)"}) {
    const std::string text = head + outs + " = split(axis = ax, num_splits = int32(2), x = x);\n} -> (a, b);\n}\n";
    const MilAst ast = parse_mil_ast(text, "split.mil");
    ASSERT_EQ(ast.functions.size(), 1u);
    const MilOperation& op = ast.functions[0].ops.at(1);
    EXPECT_EQ(op.op, "split");
    ASSERT_EQ(op.outputs.size(), 2u);
    EXPECT_EQ(op.outputs[1].name, "b");
    EXPECT_EQ(op.outputs[1].type.shape, (Shape{1, 2}));
    // At the second output's name.
    const std::string col = outs[0] == '(' ? "47" : "46";
    EXPECT_EQ(error_of([&] { mil_to_ir(ast, "split.mil"); }),
              "split.mil:6:" + col + ": multi-output op 'split' has no IR form (IR nodes have one output)");
  }
}

// A valid program of a few lines, for the errors below.
const char* const kValid = R"(program(1.3)
[buildInfo = dict<string, string>({{"k", "v"}})]
{
    func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x) {
            int32 ax = const()[name = string("ax"), val = int32(-1)];
            tensor<fp16, [1, 4, 1, 8]> y = softmax(axis = ax, x = x)[name = string("y")];
        } -> (y);
}
)";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const std::size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(MilParser, ErrorsCarryLineAndColumn) {
  ASSERT_EQ(parse_mil(kValid, "v.mil").size(), 2);
  auto err = [](const std::string& text) { return error_of([&] { parse_mil(text, "m.mil"); }); };
  const std::string v = kValid;
  EXPECT_EQ(err(""), "m.mil:1:1: expected 'program' at the start of a MIL program, found end of input");
  EXPECT_EQ(err(replaced(v, "[buildInfo = dict<string, string>({{\"k\", \"v\"}})]\n", "")),
            "m.mil:2:1: expected '[' and the buildInfo attribute after program(1.3) (the ANE's parser requires it), found '{'");
  EXPECT_EQ(err(replaced(v, "buildInfo", "buildinfo")), "m.mil:2:2: unknown program attribute 'buildinfo' (only buildInfo is known)");
  EXPECT_EQ(err(replaced(v, "softmax", "softmaxx")), "m.mil:6:44: MIL op 'softmaxx' has no IR form");
  EXPECT_EQ(err(replaced(v, "x = x)", "x = z)")), "m.mil:6:67: undefined value 'z' (a value must be defined before it is used)");
  EXPECT_EQ(err(replaced(v, "axis = ax", "axes = ax")),
            "m.mil:6:52: softmax has no argument 'axes' (its arguments: axis, x)");
  EXPECT_EQ(err(replaced(v, "int32(-1)", "int32(-1.5)")),
            "m.mil:5:65: argument 'axis' of softmax: '-1.5' is not an integer that fits in 64 bits");
  EXPECT_EQ(err(replaced(v, "[1, 4, 1, 8]> y", "[1, 4, 8]> y")),
            "m.mil:6:13: %y (softmax): declared type f16[1, 4, 8] but the inputs give f16[1, 4, 1, 8]");
  EXPECT_EQ(err(replaced(v, "int32(-1)", "int32(4)")),
            "m.mil:6:44: %y (softmax): axis 4 is out of range for rank 4");
  EXPECT_EQ(err(replaced(v, "string(\"y\")];", "string(\"y\")]")),
            "m.mil:7:9: expected ';' at the end of the operation softmax, found '}'");
  EXPECT_EQ(err(replaced(v, "string(\"ax\")", "string(\"ax)")),
            "m.mil:5:46: unterminated string (a string must end with '\"' on the line it starts)");
  EXPECT_EQ(err(replaced(v, "int32(-1)", "int32(0x1.q)")), "m.mil:5:65: malformed number '0x1.q'");
  EXPECT_EQ(err(replaced(v, "tensor<fp16, [1, 4, 1, 8]> x", "tensor<fp17, [1, 4, 1, 8]> x")),
            "m.mil:4:29: unknown dtype 'fp17'");
  EXPECT_EQ(err(replaced(v, "-> (y)", "-> (x)")),
            "m.mil:7:15: output 'x' is a function input: outputs must be produced in the body");
  EXPECT_EQ(err(replaced(v, "int32 ax", "int32 x")), "m.mil:5:19: the value 'x' is already defined at line 4");
  EXPECT_EQ(err(replaced(v, "x = x)", "x = ax)")),
            "m.mil:6:44: %y (softmax): x must be a float tensor, not i32[]");
  EXPECT_EQ(err(replaced(v, "axis = ax", "axis = x")),
            "m.mil:6:59: argument 'axis' of softmax must be a const, and 'x' is not one");
  EXPECT_EQ(err(replaced(v, "func main", "func other")), "m.mil:4:10: the function must be called main, not 'other'");
  EXPECT_EQ(err(replaced(v, "[1, 4, 1, 8]> x", "[1, 4, 1, 8] x")), "m.mil:4:48: expected '>' to close the tensor type, found 'x'");
  EXPECT_EQ(err(v + "x"), "m.mil:9:1: expected end of input after the program's closing '}', found 'x'");
  EXPECT_EQ(err(replaced(v, "[1, 4, 1, 8]> x", "[1099511627776, 2]> x")),
            "m.mil:4:22: the type's dimensions multiply to more than 2^40");
  EXPECT_EQ(err(std::string("program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n") +
                "func main<ios18>(tensor<fp16, [1]> x) {\n" +
                "tensor<fp16, [2]> w = const()[name = string(\"w\"), val = tensor<fp16, [2]>(BLOBFILE(path = string(\"@model_path/../w.bin\"), offset = uint64(64)))];\n" +
                "} -> (w);\n}\n"),
            "m.mil:5:57: const w: BLOBFILE path '@model_path/../w.bin' must name a file under @model_path/ (no empty, '.' or '..' parts)");
  EXPECT_EQ(err(std::string("program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n") +
                "func main<ios18>(tensor<fp16, [1]> x) {\n" +
                "tensor<fp16, [3]> c = const()[name = string(\"c\"), val = tensor<fp16, [3]>([1, 2])];\n" +
                "} -> (c);\n}\n"),
            "m.mil:5:57: const c: the literal has 2 values, its type fp16[3] needs 3");
  EXPECT_EQ(err(std::string("program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n") +
                "func main<ios18>(tensor<fp16, [1]> x) {\n" +
                "tensor<fp16, [1]> c = const()[name = string(\"c\"), val = tensor<fp16, [1]>([70000])];\n" +
                "} -> (c);\n}\n"),
            "m.mil:5:76: const c: 70000 is out of range for fp16");
}

// pad_type "same" pads so that the output has ceil(in / stride) positions, the odd pad at the
// end; slice_by_size's size -1 runs to the end of the axis.
TEST(MilParser, ConvSamePaddingAndSliceToTheEnd) {
  const std::string text = std::string("program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n") +
      "func main<ios18>(tensor<fp16, [1, 2, 5, 6]> x) {\n" +
      "tensor<fp16, [2, 2, 3, 2]> w = const()[val = tensor<fp16, [2, 2, 3, 2]>([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, " +
      "13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24])];\n" +
      "tensor<fp16, [1, 2, 3, 3]> y = conv(x = x, weight = w, strides = tensor<int32, [2]>([2, 2]), pad_type = string(\"same\"));\n" +
      "tensor<fp16, [1, 1, 2, 3]> z = slice_by_size(x = y, begin = tensor<int32, [4]>([0, 1, 1, 0]), size = tensor<int32, [4]>([1, -1, -1, 3]));\n" +
      "} -> (z);\n}\n";
  const ir::Graph g = parse_mil(text, "same.mil");
  // Height: 5 -> 3 outputs need (3 - 1) * 2 + 3 = 7 rows, 2 of padding, 1 + 1. Width: 6 -> 3
  // outputs need (3 - 1) * 2 + 2 = 6 columns, no padding.
  EXPECT_EQ(g.node(*g.find("y")).attr_ints("pads"), (std::vector<std::int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(g.node(*g.find("z")).attr_ints("end"), (std::vector<std::int64_t>{1, 2, 3, 3}));
  const std::string nested = replaced(text, "[val = tensor<fp16, [2, 2, 3, 2]>([1, 2,",
                                      "[val = tensor<fp16, [2, 2, 3, 2]>(BLOBFILE(path = string(BLOBFILE(");
  EXPECT_EQ(error_of([&] { parse_mil(nested, "n.mil"); }),
            "n.mil:5:96: expected a plain value (BLOBFILE cannot nest), found 'BLOBFILE'");
}

TEST(MilParser, BlobErrorsNameTheMilPlaceAndTheBlob) {
  testing_util::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/weights");
  WeightBlobWriter bw;
  bw.add_fp16(std::vector<std::uint16_t>{1, 2});
  bw.write(dir.path() + "/weights/weight.bin");
  const std::string text = std::string("program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n") +
                           "func main<ios18>(tensor<fp16, [1]> x) {\n" +
                           "tensor<fp16, [2]> w = const()[name = string(\"w\"), val = tensor<fp16, [2]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(128)))];\n" +
                           "} -> (w);\n}\n";
  EXPECT_EQ(error_of([&] { parse_mil(text, "m.mil", dir.path()); }),
            "m.mil:5:57: const w: " + dir.path() + "/weights/weight.bin: at byte 128: no blob record starts here "
            "(that is where a blob's data starts: BLOBFILE names its record, 64 bytes before)");
  EXPECT_EQ(error_of([&] { parse_mil(text, "m.mil"); }),
            "m.mil:5:57: const w: BLOBFILE needs a model folder for @model_path, and none was given");
  const std::string ok = replaced(text, "uint64(128)", "uint64(64)");
  EXPECT_EQ(parse_mil(ok, "m.mil", dir.path()).node(1).attr<Tensor>("value").data<std::uint16_t>()[1], 2);
}

// Mutations and truncations of valid programs (with a blob) must give an orion::Error or a
// graph, never a crash or another exception.
TEST(MilParser, MutatedTextGivesErrorsNotCrashes) {
  testing_util::TempDir dir;
  std::vector<std::string> texts;
  for (ir::Op op : {ir::Op::conv, ir::Op::constant, ir::Op::concat, ir::Op::slice, ir::Op::matmul}) {
    const ir::Graph g = *testing::ane_graph_using(op);
    for (MilDialect d : {MilDialect::ios18, MilDialect::ios16}) {
      MilWriteOptions o;
      o.dialect = d;
      const MilProgram p = write_mil(g, o);
      write_model_folder(p, dir.path() + "/" + std::to_string(texts.size()), o);
      texts.push_back(p.text);
    }
  }
  texts.push_back(kHandWritten);
  const std::string pieces[] = {"(", ")", "[", "]", "{", "}", "<", ">", ",", "=", ";", "->", "-", "0x", "1e", "\"",
                                "tensor", "fp16", "int32", "BLOBFILE", "const", "0", "-1", "99999999999999999999",
                                "1.5", "inf", "nan", " ", "\n", "@", "x", "true"};
  Rng rng(31337);
  int errors = 0, parsed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    const std::size_t which = static_cast<std::size_t>(rng.below(texts.size()));
    std::string t = texts[which];
    const int edits = 1 + static_cast<int>(rng.below(3));
    for (int e = 0; e < edits && !t.empty(); ++e) {
      const std::size_t at = static_cast<std::size_t>(rng.below(t.size()));
      switch (rng.below(5)) {
        case 0: t.resize(at); break;
        case 1: t.erase(at, 1 + static_cast<std::size_t>(rng.below(8))); break;
        case 2: t[at] = static_cast<char>(rng.below(256)); break;
        case 3: t.insert(at, pieces[rng.below(std::size(pieces))]); break;
        default: {  // swap two digits' worth of text: shapes, offsets and counts change
          const std::size_t d = t.find_first_of("0123456789", at);
          if (d != std::string::npos) t[d] = static_cast<char>('0' + rng.below(10));
        }
      }
    }
    const std::string folder = dir.path() + "/" + std::to_string(which);
    try {
      const ir::Graph g = parse_mil(t, "fuzz.mil", folder);
      ++parsed;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 2000);
  EXPECT_GT(parsed, 10);
}

}  // namespace
}  // namespace orion::compile
