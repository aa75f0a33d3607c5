// The catalogue, its Markdown page, and one triggering graph per graph-stage rule.
#include "compile/ane/ane_rules.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "compile/ane/ane_validator.h"
#include "core/error.h"
#include "ir/builder.h"

namespace orion::compile {
namespace {

using ir::Builder;
using ir::Value;

TEST(AneRules, IdsAreUniqueAndEveryRuleIsComplete) {
  std::set<std::string_view> ids;
  for (const AneRule& r : ane_rules()) {
    EXPECT_TRUE(ids.insert(r.id).second) << r.id;
    EXPECT_FALSE(r.summary.empty()) << r.id;
    EXPECT_FALSE(r.fix.empty()) << r.id;
    EXPECT_FALSE(r.source.empty()) << r.id;
    EXPECT_EQ(&ane_rule(r.id), &r);
  }
  EXPECT_THROW(ane_rule("ANE999"), Error);
}

TEST(AneRules, DocsPageIsTheGeneratedOne) {
  std::ifstream in(std::string(ORION_SOURCE_DIR) + "/docs/ane/RULES.md", std::ios::binary);
  ASSERT_TRUE(in) << "docs/ane/RULES.md is missing: run `orion rules --markdown > docs/ane/RULES.md`";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), ane_rules_markdown())
      << "docs/ane/RULES.md is stale: run `orion rules --markdown > docs/ane/RULES.md`";
}

// A kernel that breaks no rule: x [1, 64, 1, 384] fp16 (49,152 bytes) through a 1x1 conv on a
// const weight and a relu.
struct Clean {
  Builder b{"k"};
  Value x = b.input("x", DType::f16, {1, 64, 1, 384});
  Value w = b.constant(Tensor(DType::f16, {64, 64, 1, 1}));
  Value y = b.relu(b.conv(x, w));
};

std::set<std::string> ids_of(const ir::Graph& g, const AneTarget& t = {}) {
  std::set<std::string> ids;
  for (const AneViolation& v : check_kernel_graph(g, t)) ids.insert(std::string(v.rule->id));
  return ids;
}

TEST(AneValidator, CleanKernelPasses) {
  Clean c;
  c.b.output(c.y);
  const ir::Graph g = c.b.finish();
  EXPECT_TRUE(ids_of(g).empty());
  EXPECT_TRUE(ids_of(g, {.m1_m2 = true}).empty());
  EXPECT_TRUE(validate_kernel_graph(g, {}, "k").empty());
}

// Builds Clean + `extra` and expects exactly `ids` (each test's graph breaks only its rule).
template <class Extra>
void expect_rules(const std::set<std::string>& ids, const Extra& extra, const AneTarget& t = {}) {
  Clean c;
  c.b.output(extra(c));
  const ir::Graph g = c.b.finish();
  EXPECT_EQ(ids_of(g, t), ids);
}

TEST(AneValidator, EachGraphRuleHasATrigger) {
  expect_rules({"ANE001"}, [](Clean& c) { return c.b.neg(c.y); });
  expect_rules({"ANE001"}, [](Clean& c) {
    return c.b.add(c.y, c.b.param("p", DType::f16, {1, 64, 1, 384}));
  });
  expect_rules({"ANE002"}, [](Clean& c) { return c.b.gelu(c.y); });
  expect_rules({"ANE003"}, [](Clean& c) { return c.b.silu(c.y); });
  // ANE005: a conv on a runtime weight (here computed from the input).
  expect_rules({"ANE005"}, [](Clean& c) {
    const Value w = c.b.reshape(c.b.slice(c.y, {0, 0, 0, 0}, {1, 64, 1, 64}), {64, 64, 1, 1});
    return c.b.conv(c.y, w);
  });
  expect_rules({"ANE005", "ANE006"}, [](Clean& c) {
    const Value w = c.b.reshape(c.b.slice(c.y, {0, 0, 0, 0}, {1, 64, 1, 32}), {64, 32, 1, 1});
    return c.b.conv(c.y, w, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2);
  });
  expect_rules({"ANE007"}, [](Clean& c) { return c.x; });
  expect_rules({"ANE013"}, [](Clean& c) {
    const Value a = c.b.slice(c.y, {0, 0, 0, 0}, {1, 64, 1, 48});  // inner dimension 48
    return c.b.add(c.y, c.b.matmul(a, c.b.transpose(a, {0, 1, 3, 2})));
  }, {.m1_m2 = true});
  expect_rules({"ANE014"}, [](Clean& c) {
    return c.b.cast(c.b.cast(c.y, DType::f32), DType::f16);
  }, {.m1_m2 = true});
  expect_rules({"ANE016"}, [](Clean& c) {
    Tensor big(DType::f32, {1, 64, 1, 1});
    big.span<float>()[3] = 1e6f;
    return c.b.add(c.y, c.b.cast(c.b.constant(big), DType::f16));
  });
  expect_rules({"ANE038"}, [](Clean& c) { return c.b.rsqrt(c.b.relu(c.y)); });
  // ANE043: a conv on int4 data dequantized by blocks; ANE044: a LUT per 4 output channels.
  expect_rules({"ANE043"}, [](Clean& c) {
    const Value q = c.b.constant(Tensor(DType::i8, {64, 64, 1, 1}));
    const Value s = c.b.constant(Tensor(DType::f16, {64, 2, 1, 1}));
    return c.b.conv(c.y, c.b.op(ir::Op::dequantize, {q, s}, {{"bits", std::int64_t{4}}}));
  });
  const auto lut_conv = [](Clean& c, std::int64_t tables) {
    const Value lut = c.b.constant(Tensor(DType::f16, {tables, 1, 1, 1, 16, 1}));
    const Value idx = c.b.constant(Tensor(DType::i32, {64, 64, 1, 1}));
    return c.b.conv(c.y, c.b.gather(c.b.reshape(lut, {tables * 16}), idx));
  };
  expect_rules({}, [&](Clean& c) { return lut_conv(c, 8); });  // 8 channels a LUT: the recommended group
  expect_rules({"ANE044"}, [&](Clean& c) { return lut_conv(c, 16); });
  expect_rules({"ANE040"}, [](Clean& c) { return c.b.softmax(c.y, 3); });  // over 384 values
  expect_rules({"ANE017"}, [](Clean& c) {
    const Value s = c.b.reduce_sum(c.y, {1, 3}, true);  // 64 * 384 values
    return c.b.mul(c.y, s);
  });
}

TEST(AneValidator, SurfaceRules) {
  const auto kernel = [](Shape in, DType dt, Shape out) {
    Builder b("k");
    const Value x = b.input("x", dt, in);
    const Value y = b.relu(dt == DType::f16 ? x : b.cast(x, DType::f16));
    b.output(b.reshape(y, out));
    return b.finish();
  };
  EXPECT_EQ(ids_of(kernel({64, 384}, DType::f16, {64, 384})), (std::set<std::string>{"ANE008"}));
  EXPECT_EQ(ids_of(kernel({1, 64, 1, 384}, DType::i32, {1, 64, 1, 384})), (std::set<std::string>{"ANE009"}));
  EXPECT_EQ(ids_of(kernel({1, 64, 1, 384}, DType::f32, {1, 64, 1, 384})), std::set<std::string>{});
  EXPECT_EQ(ids_of(kernel({1, 64, 1, 384}, DType::f32, {1, 64, 1, 384}), {.m1_m2 = true}),
            (std::set<std::string>{"ANE009", "ANE014"}));
  // 1536 channels of 16 tokens: 49,152 bytes, but 32 bytes on the last axis.
  EXPECT_EQ(ids_of(kernel({1, 1536, 1, 16}, DType::f16, {1, 1536, 1, 16})), (std::set<std::string>{"ANE011"}));
  // 64 channels of 32 tokens, 4 KiB: legal in a surface allocated at 48 KiB, which the runtime
  // checks (ANE012 is a runtime rule), and 4-D [1, C, H, W] I/O ran too.
  EXPECT_EQ(ids_of(kernel({1, 64, 1, 32}, DType::f16, {1, 64, 1, 32})), std::set<std::string>{});
  EXPECT_EQ(ids_of(kernel({1, 64, 8, 96}, DType::f16, {1, 64, 8, 96})), std::set<std::string>{});

  Builder b("k");
  const Value x = b.input("x", DType::f16, {1, 64, 1, 384});
  const Value z = b.input("z", DType::f16, {1, 128, 1, 384});
  b.output(b.relu(x));
  b.output(b.relu(z));
  const std::set<std::string> ids = ids_of(b.finish());
  // Tensors of different sizes are legal: the runtime allocates both surfaces at the larger
  // size (ANE010 is a runtime rule; ane-sim's test triggers it).
  EXPECT_EQ(ids, std::set<std::string>{});
}

TEST(AneValidator, OnChipBudgetIsAWarning) {
  Clean c;
  c.b.output(c.y);
  const ir::Graph g = c.b.finish();
  const AneTarget small{.on_chip_bytes = 1000};  // the 64x64 fp16 weight is 8,192 bytes
  EXPECT_EQ(ids_of(g, small), (std::set<std::string>{"ANE015"}));
  const auto warnings = validate_kernel_graph(g, small, "k");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].message().find("ANE015 warning kernel: 8192 bytes"), std::string::npos)
      << warnings[0].message();
}

TEST(AneValidator, ErrorsNameTheRuleTheNodeAndTheFix) {
  Clean c;
  c.b.output(c.b.gelu(c.y));
  const ir::Graph g = c.b.finish();
  try {
    validate_kernel_graph(g, {}, "layer3.mlp");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("kernel layer3.mlp breaks 1 ANE rule(s)"), std::string::npos) << m;
    EXPECT_NE(m.find("ANE002 %"), std::string::npos) << m;
    EXPECT_NE(m.find("(gelu): gelu has no ANE form"), std::string::npos) << m;
    EXPECT_NE(m.find("Fix: run the legalize pass"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace orion::compile
