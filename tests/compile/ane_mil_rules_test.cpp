// The MIL-stage rules of the catalogue, each triggered by a program text.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compile/ane/ane_validator.h"
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
