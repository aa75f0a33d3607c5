// The MIL-stage rules of the catalogue, each triggered by a program text.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compile/ane/ane_validator.h"
#include "compile/ane/weight_slots.h"
#include "compile/mil/mil_parser.h"
#include "compile/mil/mil_to_ir.h"
#include "compile/blob/weight_blob_writer.h"
#include "core/error.h"
#include "core/half.h"
#include "core/testing_temp_dir.h"

namespace orion::compile {
namespace {

std::string program(std::string_view version, std::string_view opset, const std::string& body,
                    const std::string& params = "tensor<fp16, [1, 64, 1, 384]> x", const std::string& outs = "y") {
  return "program(" + std::string(version) +
         ")\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n  func main<" +
         std::string(opset) + ">(" + params + ") {\n" + body + "  } -> (" + outs + ");\n}\n";
}

const std::string kRelu = "    tensor<fp16, [1, 64, 1, 384]> y = relu(x = x)[name = string(\"y\")];\n";

std::set<std::string> ids_of(const std::string& text, const AneTarget& t = {}) {
  std::set<std::string> ids;
  for (const AneViolation& v : check_mil_program(parse_mil_ast(text, "k.mil"), t, "k.mil"))
    ids.insert(std::string(v.rule->id));
  return ids;
}

TEST(AneMilRules, CleanProgramPasses) {
  EXPECT_TRUE(ids_of(program("1.3", "ios18", kRelu)).empty());
  EXPECT_TRUE(ids_of(program("1.0", "ios16", kRelu), {.m1_m2 = true}).empty());
}

TEST(AneMilRules, EachRuleHasATrigger) {
  EXPECT_EQ(ids_of(program("1.3", "ios18", "    tensor<fp16, [1, 64, 1, 384]> y = softmax(axis = int32(-1), x = x);\n")),
            std::set<std::string>{"ANE018"});
  EXPECT_EQ(ids_of(program("1.3", "ios18",
                           "    tensor<fp16, [1, 64, 1, 384]> y = conv(bias = b, weight = W, x = x);\n")),
            std::set<std::string>{"ANE019"});
  EXPECT_EQ(ids_of(program("1.3", "ios18", "    tensor<fp16, [1, 64, 1, 768]> y = tile(reps = r, x = x);\n")),
            std::set<std::string>{"ANE020"});
  EXPECT_EQ(ids_of(program("1.3", "ios18",
                           "    tensor<fp16, [1, 64, 1, 384]> y = scaled_dot_product_attention(key = x, query = x, "
                           "value = x);\n")),
            std::set<std::string>{"ANE021"});
  EXPECT_EQ(ids_of(program("1.3", "ios18", kRelu), {.m1_m2 = true}), std::set<std::string>{"ANE024"});
  EXPECT_EQ(ids_of(program("1.3", "ios18", kRelu, "tensor<fp16, [1, 64, 1, 384]> x", "x")),
            std::set<std::string>{"ANE007"});
  // concat: the inline axis and the missing interleave of the refused form, one finding each;
  // the named-const form that ran is clean.
  EXPECT_EQ(ids_of(program("1.3", "ios18",
                           "    tensor<fp16, [1, 128, 1, 384]> y = concat(axis = int32(1), values = (x, x));\n")),
            std::set<std::string>{"ANE004"});
  EXPECT_TRUE(ids_of(program("1.3", "ios18",
                             "    int32 a = const()[name = string(\"a\"), val = int32(1)];\n"
                             "    bool i = const()[name = string(\"i\"), val = bool(false)];\n"
                             "    tensor<fp16, [1, 128, 1, 384]> y = concat(axis = a, interleave = i, values = (x, x));\n"))
                  .empty());
  // ANE037: 16 BLOBFILE tensors compile, 17 do not, and a scalar operand costs one slot.
  const auto weights = [](int n, bool scalar) {
    std::string body;
    for (int i = 0; i < n; ++i)
      body += "    tensor<fp16, [1, 64, 1, 1]> w" + std::to_string(i) +
              " = const()[name = string(\"w\"), val = tensor<fp16, [1, 64, 1, 1]>(BLOBFILE(path = "
              "string(\"@model_path/weights/weight.bin\"), offset = uint64(" + std::to_string(64 + 192 * i) + ")))];\n";
    body += "    fp16 k = const()[name = string(\"k\"), val = fp16(0x1p+0)];\n";
    body += scalar ? "    tensor<fp16, [1, 64, 1, 384]> y = mul(x = x, y = k)[name = string(\"y\")];\n" : kRelu;
    return program("1.3", "ios18", body);
  };
  // ANE037 is counted, not enforced yet (its rule says why).
  const auto slots = [](const std::string& text) {
    return count_weight_slots(parse_mil_ast(text, "k.mil").functions[0]).total();
  };
  EXPECT_EQ(slots(weights(16, false)), 16);
  EXPECT_EQ(slots(weights(17, false)), 17);
  EXPECT_EQ(slots(weights(15, true)), 16);
  EXPECT_EQ(slots(weights(16, true)), 17);
  // ANE045: the iOS18 forms of the weight ops in an ios16 program; the iOS16 LUT form is clean.
  const std::string blob = "(BLOBFILE(path = tensor<string, []>(\"@model_path/weights/weight.bin\"), offset = tensor<uint64, []>(64)))";
  const std::string lut_tail = "    tensor<fp16, [1, 64, 1, 384]> y = conv(weight = w, x = x);\n";
  EXPECT_EQ(ids_of(program("1.0", "ios16",
                           "    tensor<uint4, [64, 64, 1, 1]> i = const()[name = tensor<string, []>(\"i\"), val = tensor<uint4, [64, 64, 1, 1]>" + blob +
                               "];\n    tensor<fp16, [64, 64, 1, 1]> w = constexpr_lut_to_dense(indices = i, lut = l);\n" + lut_tail)),
            std::set<std::string>{"ANE045"});
  EXPECT_EQ(ids_of(program("1.0", "ios16", "    tensor<fp16, [64, 64, 1, 1]> w = constexpr_blockwise_shift_scale(data = q, scale = s);\n" + lut_tail)),
            std::set<std::string>{"ANE045"});
  std::string lut_blob = blob;  // one file per tensor on M1/M2 (ANE039)
  lut_blob.replace(lut_blob.find("weight.bin"), 10, "lut.bin");
  EXPECT_TRUE(ids_of(program("1.0", "ios16",
                             "    tensor<fp16, [64, 64, 1, 1]> w = constexpr_lut_to_dense()[indices = tensor<uint8, [2048]>" + blob +
                                 ", lut = tensor<fp16, [16]>" + lut_blob + ", shape = tensor<uint32, [4]>([64, 64, 1, 1])];\n" + lut_tail),
                     {.m1_m2 = true})
                  .empty());
  // A constexpr op's weight tensors may be inline BLOBFILE arguments, as Core ML writes them.
  EXPECT_TRUE(ids_of(program("1.3", "ios18",
                             "    tensor<fp16, [64, 64, 1, 1]> w = constexpr_lut_to_dense(indices = tensor<uint4, [64, 64, 1, 1]>" + blob +
                                 ", lut = tensor<fp16, [1, 1, 1, 1, 16, 1]>" + blob + ");\n" + lut_tail))
                  .empty());
  // ANE039: several tensors in one file on an M1/M2 target (the dialect right for it).
  std::string m1 = weights(2, false);
  m1.replace(m1.find("program(1.3)"), 12, "program(1.0)");
  m1.replace(m1.find("main<ios18>"), 11, "main<ios16>");
  EXPECT_EQ(ids_of(m1, {.m1_m2 = true}), std::set<std::string>{"ANE039"});
  EXPECT_TRUE(ids_of(m1).empty());
  const std::string m = check_mil_program(parse_mil_ast(program("1.3", "ios18",
                                              "    tensor<fp16, [1, 64, 1, 768]> y = tile(reps = r, x = x);\n"),
                                              "k.mil"),
                                          {}, "k.mil")[0]
                            .message();
  EXPECT_EQ(m.rfind("ANE020 k.mil:5:39 tile: tile is emitted", 0), 0u) << m;
}

// ANE022 and ANE023: a BLOBFILE offset must name a record, and the file must be valid; the
// reader behind mil_to_ir refuses anything else.
TEST(AneMilRules, BlobOffsetsMustNameRecords) {
  testing_util::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/weights");
  WeightBlobWriter w;
  std::vector<std::uint16_t> halves(64 * 64, float_to_half(0.5f));
  ASSERT_EQ(w.add_fp16(halves), 64u);
  w.write(dir.path() + "/weights/weight.bin");
  const auto text = [](int offset) {
    return program("1.3", "ios18",
                   "    tensor<fp16, [64, 64, 1, 1]> W = const()[name = string(\"W\"), val = tensor<fp16, [64, 64, 1, "
                   "1]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(" +
                       std::to_string(offset) + ")))];\n" + kRelu);
  };
  EXPECT_NO_THROW(parse_mil(text(64), "k.mil", dir.path()));
  EXPECT_THROW(parse_mil(text(128), "k.mil", dir.path()), Error);  // the data, not the record
  EXPECT_THROW(parse_mil(text(0), "k.mil", dir.path()), Error);    // the header
  std::filesystem::resize_file(dir.path() + "/weights/weight.bin", 64 + 64 + 100);  // truncated
  EXPECT_THROW(parse_mil(text(64), "k.mil", dir.path()), Error);
}

}  // namespace
}  // namespace orion::compile
