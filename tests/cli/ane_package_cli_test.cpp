// orion compile --target ane, orion inspect, orion perplexity --device ane-sim: a whole model
// compiled into a package, shown, and scored on ane-sim against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "test_scale.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class AnePackageCli : public CliFolderTest {
 protected:
  // Every run keeps its caches (packages, the device's programs) inside the test's folder.
  CliResult orion(const std::string& args) const { return run_orion_env("ORION_CACHE_DIR=" + path("cache") + " ", args); }
  void SetUp() override {
    CliFolderTest::SetUp();
    model_ = (dir_ / "model").string();
    ASSERT_EQ(orion("init -o " + model_ + " --layers 2 --dim 64 --context 128 --seed 3 " + arch_args()).status, 0);
  }
  virtual std::string arch_args() const { return "--heads 2"; }
  std::string model_;
};

// The device paths of every architecture: GPT-2, and Llama with grouped-query attention.
class AnePackageArchCli : public AnePackageCli, public ::testing::WithParamInterface<std::string> {
 protected:
  std::string arch_args() const override {
    return GetParam() == "gpt2" ? "--heads 2" : "--arch llama --heads 4 --kv-heads 2";
  }
};

INSTANTIATE_TEST_SUITE_P(Archs, AnePackageArchCli, ::testing::Values("gpt2", "llama_gqa"));

TEST_F(AnePackageCli, CompilesInspectsAndRefusesToOverwrite) {
  const std::string pkg = (dir_ / "pkg").string();
  const CliResult r = orion("compile -m " + model_ + " --target ane --seq 64 -o " + pkg);
  ASSERT_EQ(r.status, 0) << r.out;
  // Attention over the KV cache is in the decode kernels, whose only host step is the embedding
  // lookup; two layers of 12 weight tensors each, and the head, are more than one kernel's 15
  // (ANE037): 3 prefill kernels, 2 decode ones.
  EXPECT_NE(r.out.find("wrote " + pkg + ": 5 kernels"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(fs::path(pkg) / "manifest.json"));
  EXPECT_TRUE(fs::exists(fs::path(pkg) / "prefill_ane0" / "model.mil"));
  EXPECT_TRUE(fs::exists(fs::path(pkg) / "prefill_ane0" / "weights" / "weight.bin"));
  EXPECT_TRUE(fs::exists(fs::path(pkg) / "decode_host0" / "graph.ir"));
  EXPECT_FALSE(fs::exists(fs::path(pkg) / "decode_host1"));
  // The old placement on request: attention over the cache in host segments between kernels.
  const std::string host_pkg = (dir_ / "host_pkg").string();
  const CliResult h = orion("compile -m " + model_ + " --target ane --seq 64 --context 100 --host-attention -o " + host_pkg);
  ASSERT_EQ(h.status, 0) << h.out;
  EXPECT_TRUE(fs::exists(fs::path(host_pkg) / "decode_host1" / "graph.ir"));
  const CliResult bad = orion("compile -m " + model_ + " --target ane --seq 64 --context 100 -o " + (dir_ / "bad").string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("multiple of 32"), std::string::npos) << bad.out;

  const CliResult again = orion("compile -m " + model_ + " --target ane --seq 64 -o " + pkg);
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.out.find("exists"), std::string::npos) << again.out;
  EXPECT_EQ(orion("compile -m " + model_ + " --target ane --seq 64 --force -o " + pkg).status, 0);

  const CliResult in = orion("inspect " + pkg);
  ASSERT_EQ(in.status, 0) << in.out;
  EXPECT_NE(in.out.find("program prefill: window of 64 tokens"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("program decode: window of 1 tokens"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("[stage 1] ane  prefill_ane0"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("in  0  gather_0"), std::string::npos) << in.out;  // binding order
  const CliResult bench = orion("bench kernels " + pkg + " --runs 2 --json");
  ASSERT_EQ(bench.status, 0) << bench.out;
  const auto first = nlohmann::json::parse(bench.out.substr(0, bench.out.find('\n')));
  EXPECT_EQ(first["program"], "prefill");
  EXPECT_EQ(first["kernels"], 3);
  EXPECT_EQ(first["compiles"], 3);
  const CliResult js = orion("inspect --json " + pkg);
  ASSERT_EQ(js.status, 0);
  EXPECT_EQ(nlohmann::json::parse(js.out)["programs"].size(), 2u);
}

TEST_F(AnePackageCli, ABrokenManifestIsAnErrorNamingTheField) {
  const std::string pkg = (dir_ / "pkg").string();
  ASSERT_EQ(orion("compile -m " + model_ + " --target ane --seq 32 -o " + pkg).status, 0);
  const fs::path mf = fs::path(pkg) / "manifest.json";
  nlohmann::json j = nlohmann::json::parse(read(mf));
  j["programs"][0]["steps"][1]["io"]["inputs"][0]["bytes"] = 7;
  std::ofstream(mf) << j.dump();
  const CliResult r = orion("inspect " + pkg);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("manifest.json: at /programs/0/steps/1/io/inputs/0/bytes"), std::string::npos) << r.out;
  std::ofstream(mf) << "{\"format\": ";
  EXPECT_NE(orion("inspect " + pkg).out.find("not valid JSON"), std::string::npos);
  EXPECT_NE(orion("compile --target ane -o " + (dir_ / "x").string()).out.find("-m DIR"), std::string::npos);
}

double loss_of(const CliResult& r) {
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  return j["loss"].get<double>();
}

// The bar: perplexity on ane-sim within 1% of the CPU's, in both device modes (each
// window's first half by the prefill program, the rest by decode steps on the device, or on the
// CPU after the device's prefill). A random model's losses are close to log(vocab) whatever
// happens, so the logits tests (tests/runtime) are the sharp check; this one proves the
// commands' paths end to end.
TEST_P(AnePackageArchCli, PerplexityOnAneSimIsWithinOnePercentOfTheCpuInEveryMode) {
  // About 53 byte-level tokens a line: windows of 96 every 48 tokens, the last one shorter; more
  // lines add more of the same windows (each runs 48 decode steps in every mode).
  std::string text;
  for (int i = 0; i < testing_util::at_scale(4, 2); ++i)
    text += "The quick brown fox jumps over the lazy dog, line " + std::to_string(i) + ".\n";
  const std::string t = write("text.txt", text);
  const std::string pkg = path("pkg");
  ASSERT_EQ(orion("compile -m " + model_ + " --target ane --seq 64 -o " + pkg).status, 0);
  const std::string base = "perplexity -m " + model_ + " -f " + t + " --window 96 --json ";
  const CliResult cpu = orion(base);
  const CliResult sim = orion(base + "--device ane-sim --package " + pkg);
  const CliResult hybrid = orion(base + "--device ane-sim --ane-prefill --package " + pkg);
  const CliResult fresh = orion(base + "--device ane-sim --seq 64 --no-cache");
  for (const CliResult* r : {&cpu, &sim, &hybrid, &fresh}) ASSERT_EQ(r->status, 0) << r->out;
  const double lc = loss_of(cpu), ls = loss_of(sim), lh = loss_of(hybrid);
  std::cout << "[ info ] " << GetParam() << ": loss cpu " << lc << ", ane-sim " << ls << ", ane-sim prefill + cpu decode " << lh << "\n";
  EXPECT_LT(std::abs(std::exp(ls - lc) - 1), 0.01);
  EXPECT_LT(std::abs(std::exp(lh - lc) - 1), 0.01);
  // The two modes ran different code: decoding on the device runs kernels every token, the
  // other only the prefill's (their losses can agree to the printed digits).
  const auto kernel_runs = [&](const std::string& mode) {
    const CliResult r = orion("perplexity -m " + model_ + " -f " + t + " --window 96 --device ane-sim --package " + pkg + mode);
    const std::size_t at = r.out.find(" kernel runs");
    EXPECT_NE(at, std::string::npos) << r.out;
    return at == std::string::npos ? -1 : std::stoi(r.out.substr(r.out.rfind(' ', at - 1) + 1));
  };
  const int on_device = kernel_runs(""), prefill_only = kernel_runs(" --ane-prefill");
  EXPECT_GT(on_device, 2 * prefill_only) << on_device << " vs " << prefill_only;
  EXPECT_GT(prefill_only, 0);
  EXPECT_EQ(loss_of(fresh), ls);  // the package compiled on the fly is the same
  // A window beyond the decode program's cache (127 slots + the token) is refused.
  EXPECT_NE(orion("perplexity -m " + model_ + " -f " + t + " --device ane-sim --package " + pkg + " --window 129").status, 0);
}

// --weights int8: the kernels hold int8 weights and fp16 scales dequantized in the program
// (constexpr_blockwise_shift_scale), ane-sim runs them, and the logits stay close to f32's while
// differing from the fp16 package's (the int8 path really is taken).
TEST_P(AnePackageArchCli, Int8WeightsRunOnAneSimCloseToF32) {
  const std::string f16 = path("f16"), q8 = path("q8");
  ASSERT_EQ(orion("compile -m " + model_ + " --target ane --seq 32 -o " + f16).status, 0);
  const CliResult c = orion("compile -m " + model_ + " --target ane --seq 32 --weights int8 -o " + q8);
  ASSERT_EQ(c.status, 0) << c.out;
  const std::string mil = read(fs::path(q8) / "prefill_ane0" / "model.mil");
  EXPECT_NE(mil.find("constexpr_blockwise_shift_scale(data = "), std::string::npos);
  EXPECT_NE(mil.find("tensor<int8, ["), std::string::npos);
  const auto bench = [&](const std::string& pkg) {
    const CliResult r = orion("bench decode -m " + model_ + " --dtype f32 --package " + pkg + " --tokens 8 --runs 1 --json");
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out.substr(r.out.find('{')));
  };
  const auto jq = bench(q8), jf = bench(f16);
  const double eq = jq["ane_sim_logits_rel_error"].get<double>(), ef = jf["ane_sim_logits_rel_error"].get<double>();
  std::cout << "[ info ] " << GetParam() << ": logits error against f32: fp16 package " << ef << ", int8 package " << eq
            << ", top-1 agreement " << jq["ane_sim_top1_agreement"] << "\n";
  EXPECT_LT(eq, 0.05);
  EXPECT_GT(eq, ef);  // int8 weights cost precision that fp16 ones do not
}

// --weights lut4, int4: the kernels hold 4-bit weights (constexpr_lut_to_dense over uint4 codes,
// constexpr_blockwise_shift_scale over int4 data; their size: tests/runtime/package_4bit_test);
// `orion mil check` passes them (int4 with ANE043's warning), `orion mil run` runs them on
// ane-sim close to the same program in f32; the ios16 dialect refuses int4 and says why.
TEST_F(AnePackageCli, FourBitWeightsCompileCheckAndRun) {
  const auto compile = [&](const std::string& weights, const std::string& extra = "") {
    return orion("compile -m " + model_ + " --target ane --seq 32 --weights " + weights + extra + " -o " + path(weights));
  };
  for (const std::string w : {"lut4", "int4"}) {
    const CliResult c = compile(w);
    ASSERT_EQ(c.status, 0) << c.out;
    const fs::path kernel = fs::path(path(w)) / "prefill_ane0";
    const std::string mil = read(kernel / "model.mil");
    EXPECT_NE(mil.find(w == "lut4" ? "= constexpr_lut_to_dense(indices = " : "= constexpr_blockwise_shift_scale(data = "), std::string::npos);
    EXPECT_NE(mil.find(w == "lut4" ? "tensor<uint4, [" : "tensor<int4, ["), std::string::npos);
    const CliResult check = orion("mil check " + kernel.string());
    EXPECT_EQ(check.status, 0) << check.out;
    EXPECT_EQ(check.out.find("ANE043") != std::string::npos, w == "int4") << check.out;
    const CliResult run = orion("mil run " + kernel.string() + " --compare --out " + path(w + "-run"));
    ASSERT_EQ(run.status, 0) << run.out;
    const auto at = run.out.find("relative rms error ");
    ASSERT_NE(at, std::string::npos) << run.out;
    EXPECT_LT(std::stod(run.out.substr(at + 19)), 5e-3) << run.out;
  }
  const CliResult refused = compile("int4", " --dialect ios16");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("--weights int4 writes constexpr_blockwise_shift_scale, an ios18 op"), std::string::npos) << refused.out;
}

// generate --device ane-sim compiles into the package cache on first use; the second run finds
// the package and the device's program cache, and compiles nothing.
TEST_P(AnePackageArchCli, GenerateOnAneSimCompilesOnceIntoTheCache) {
  const std::string env = "ORION_CACHE_DIR=" + path("cache") + " ";
  const std::string cmd = "generate -m " + model_ + " -p hello -n 8 --temp 0 --device ane-sim --seq 32";
  const CliResult first = run_orion_env(env, cmd);
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_NE(first.out.find("package cache miss"), std::string::npos) << first.out;
  // Every kernel compiled once (as many as the weight-tensor budget cuts the two layers into),
  // then found in the program cache.
  const auto count_before = [](const std::string& out, const std::string& what) {
    const std::size_t at = out.find(what);
    if (at == std::string::npos) return -1;
    const std::size_t start = out.rfind(' ', at - 1) + 1;
    return std::stoi(out.substr(start, at - start));
  };
  const int kernels = count_before(first.out, " compiles, 0 program-cache hits");
  EXPECT_GE(kernels, 2) << first.out;
  const CliResult second = run_orion_env(env, cmd + " --profile");
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_NE(second.out.find("package cache hit"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("ane-sim: 0 compiles, " + std::to_string(kernels) + " program-cache hits"), std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("decode_ane0"), std::string::npos) << second.out;  // the profile's table
  const CliResult cpu = orion("generate -m " + model_ + " -p hello -n 8 --temp 0 --engine graph");
  const CliResult hybrid = run_orion_env(env, cmd + " --ane-prefill");
  ASSERT_EQ(hybrid.status, 0) << hybrid.out;
  EXPECT_NE(hybrid.out.find("prefill on the device, decode on the CPU"), std::string::npos) << hybrid.out;
  // Greedy text of a random model flips on near ties, so only the start is compared: the first
  // token comes from the same prefill logits within fp16 rounding.
  ASSERT_EQ(cpu.status, 0) << cpu.out;
  EXPECT_NE(first.out.find(cpu.out.substr(0, 6)), std::string::npos) << cpu.out << "\n" << first.out;
#if !defined(__APPLE__)
  // The Neural Engine itself: the same package, but no device here, said in one line.
  const CliResult ane = run_orion_env(env, "generate -m " + model_ + " -p hello -n 2 --device ane --seq 32");
  EXPECT_EQ(ane.status, 1) << ane.out;
  EXPECT_NE(ane.out.find("ane-sim"), std::string::npos) << ane.out;  // the error points to the emulator
#endif
}

}  // namespace
}  // namespace orion::test
