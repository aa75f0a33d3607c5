// orion mil check / run: the workbench for ANE programs, on the kernel folders Orion writes and
// on programs written by hand. The numbers of `mil run` are checked against numpy (Debian's
// python3-numpy, reading and writing the .npy files), not against Orion's own executor.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

// Debian's interpreter, which has python3-numpy (scripts/setup.sh installs it with torch).
constexpr const char* kPython = "/usr/bin/python3";

CliResult run_python(const std::string& script) {
  const std::string cmd = std::string(kPython) + " - <<'PY'\n" + script + "\nPY\n";
  CliResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Two inputs, two outputs, elementwise: every surface is [1, 768, 1, 32] fp16, 49,152 bytes.
constexpr const char* kProgram = R"(program(1.3)
[buildInfo = dict<string, string>({{"coremlc-version", "3505.4.1"}})]
{
    func main<ios18>(tensor<fp16, [1, 768, 1, 32]> x, tensor<fp16, [1, 768, 1, 32]> y) {
            tensor<fp16, [1, 768, 1, 32]> s = add(x = x, y = y)[name = string("s")];
            tensor<fp16, [1, 768, 1, 32]> t = tanh(x = s)[name = string("t")];
            tensor<fp16, [1, 768, 1, 32]> out = mul(x = t, y = x)[name = string("out")];
            tensor<fp16, [1, 768, 1, 32]> z = sigmoid(x = y)[name = string("z")];
    } -> (out, z);
}
)";

class MilCli : public CliFolderTest {
 protected:
  std::string program(const std::string& name, const std::string& text) {
    fs::create_directories(dir_ / name);
    write(name + "/model.mil", text);
    return path(name);
  }
};

// Every kernel folder of a compiled package passes the check, and runs with --compare.
TEST_F(MilCli, ChecksAndRunsEveryKernelFolderOrionWrites) {
  const std::string m = path("m"), pkg = path("pkg");
  ASSERT_EQ(run_orion("init -o " + m + " --layers 1 --dim 64 --heads 2 --context 64").status, 0);
  const CliResult c = run_orion("compile -m " + m + " --target ane --seq 32 -o " + pkg);
  ASSERT_EQ(c.status, 0) << c.out;
  int kernels = 0;
  for (const auto& e : fs::directory_iterator(pkg)) {
    if (!fs::exists(e.path() / "model.mil")) continue;
    ++kernels;
    const CliResult check = run_orion("mil check " + e.path().string());
    EXPECT_EQ(check.status, 0) << check.out;
    EXPECT_NE(check.out.find("the ANE rules hold"), std::string::npos) << check.out;
    const CliResult run = run_orion("mil run " + e.path().string() + " --compare --out " + path("out"));
    ASSERT_EQ(run.status, 0) << run.out;
    // ane-sim's fp16 against the program in f32: close, and not trivially equal.
    const auto at = run.out.find("relative rms error ");
    ASSERT_NE(at, std::string::npos) << run.out;
    const double err = std::stod(run.out.substr(at + 19));
    EXPECT_GT(err, 0.0) << run.out;
    EXPECT_LT(err, 5e-3) << run.out;
  }
  EXPECT_GE(kernels, 2);
}

// Inputs from numpy, outputs back to numpy, and the values numpy computes from the same fp16
// inputs in float64.
TEST_F(MilCli, RunsAProgramOnInputsFromNumpyAndMatchesNumpy) {
  const std::string p = program("p", kProgram), in = path("in"), out = path("out");
  const CliResult made = run_python("import numpy as np\nimport os\nos.makedirs('" + in + "', exist_ok=True)\n"
                                    "r = np.random.default_rng(3)\n"
                                    "np.save('" + in + "/x.npy', r.standard_normal((1, 768, 1, 32)).astype(np.float16))\n"
                                    "np.save('" + in + "/y.npy', r.standard_normal((1, 768, 1, 32)).astype(np.float32))\n");
  ASSERT_EQ(made.status, 0) << made.out;
  const CliResult run = run_orion("mil run " + p + " --inputs " + in + " --out " + out);
  ASSERT_EQ(run.status, 0) << run.out;
  const CliResult checked = run_python(
      "import numpy as np\n"
      "x = np.load('" + in + "/x.npy').astype(np.float64)\n"
      "y = np.load('" + in + "/y.npy').astype(np.float16).astype(np.float64)\n"
      "out = np.load('" + out + "/out.npy'); z = np.load('" + out + "/z.npy')\n"
      "assert out.dtype == np.float16 and out.shape == (1, 768, 1, 32), (out.dtype, out.shape)\n"
      "raw = np.fromfile('" + out + "/z.f16', dtype=np.float16).reshape(1, 768, 1, 32)\n"
      "assert (raw == z).all()\n"
      "want_out = np.tanh(x + y) * x\n"
      "want_z = 1 / (1 + np.exp(-y))\n"
      "e1 = np.abs(out - want_out).max(); e2 = np.abs(z - want_z).max()\n"
      "print('max errors', e1, e2)\n"
      "assert e1 < 1e-2 and e2 < 2e-3, (e1, e2)\n"
      "used = np.load('" + out + "/inputs/y.npy')\n"
      "assert (used == np.load('" + in + "/y.npy').astype(np.float16)).all()\n");
  EXPECT_EQ(checked.status, 0) << checked.out << run.out;
}

// fp32 I/O and a weight record whose size field is twice its data, both forms the hardware ran:
// numpy writes the inputs and the weight file (its fields packed with struct, as the benchmark
// writers lay them out), and checks the outputs against y = 2 * fp16(x) and z = fp16(w + b).
TEST_F(MilCli, RunsFp32IoAndAWeightRecordLargerThanItsData) {
  const std::string f = program("f", R"(program(1.3)
[buildInfo = dict<string, string>({{"coremlc-version", "3505.4.1"}})]
{
    func main<ios18>(tensor<fp32, [1, 256, 1, 64]> x) {
            string to16 = const()[name = string("to16"), val = string("fp16")];
            tensor<fp16, [1, 256, 1, 64]> xh = cast(dtype = to16, x = x)[name = string("xh")];
            fp16 two = const()[name = string("two"), val = fp16(0x1p+1)];
            tensor<fp16, [1, 256, 1, 64]> yh = mul(x = xh, y = two)[name = string("yh")];
            string to32 = const()[name = string("to32"), val = string("fp32")];
            tensor<fp32, [1, 256, 1, 64]> y = cast(dtype = to32, x = yh)[name = string("y")];
    } -> (y);
}
)");
  const std::string w = program("w", R"(program(1.3)
[buildInfo = dict<string, string>({{"coremlc-version", "3505.4.1"}})]
{
    func main<ios18>(tensor<fp16, [1, 64, 1, 384]> w) {
            tensor<fp16, [1, 64, 1, 1]> b = const()[name = string("b"), val = tensor<fp16, [1, 64, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
            tensor<fp16, [1, 64, 1, 384]> z = add(x = w, y = b)[name = string("z")];
    } -> (z);
}
)");
  const std::string in = path("in"), out_f = path("out_f"), out_w = path("out_w");
  const CliResult made = run_python(
      "import numpy as np, os, struct\n"
      "os.makedirs('" + in + "', exist_ok=True); os.makedirs('" + w + "/weights', exist_ok=True)\n"
      "r = np.random.default_rng(5)\n"
      "np.save('" + in + "/x.npy', r.standard_normal((1, 256, 1, 64)).astype(np.float32))\n"
      "np.save('" + in + "/w.npy', r.standard_normal((1, 64, 1, 384)).astype(np.float16))\n"
      "b = r.standard_normal(64).astype(np.float16)\n"
      "np.save('" + path("b.npy") + "', b)\n"
      "header = struct.pack('<II', 1, 2).ljust(64, b'\\0')\n"
      "record = struct.pack('<IIQQ', 0xDEADBEEF, 1, 2 * b.nbytes, 128).ljust(64, b'\\0')\n"
      "open('" + w + "/weights/weight.bin', 'wb').write(header + record + b.tobytes())\n");
  ASSERT_EQ(made.status, 0) << made.out;
  const CliResult ran_f = run_orion("mil run " + f + " --inputs " + in + " --out " + out_f);
  ASSERT_EQ(ran_f.status, 0) << ran_f.out;
  const CliResult ran_w = run_orion("mil run " + w + " --inputs " + in + " --out " + out_w);
  ASSERT_EQ(ran_w.status, 0) << ran_w.out;
  EXPECT_NE(ran_w.out.find("warning: " + w + "/weights/weight.bin: at byte 72: the record gives 256 bytes, the "
                           "program's f16[1, 64, 1, 1] needs 128"),
            std::string::npos)
      << ran_w.out;
  const CliResult checked = run_python(
      "import numpy as np\n"
      "x = np.load('" + in + "/x.npy')\n"
      "y = np.load('" + out_f + "/y.npy')\n"
      "assert y.dtype == np.float32 and y.shape == (1, 256, 1, 64), (y.dtype, y.shape)\n"
      "assert (np.fromfile('" + out_f + "/y.f32', dtype=np.float32).reshape(y.shape) == y).all()\n"
      "assert (np.load('" + out_f + "/inputs/x.npy') == x).all()\n"
      "assert (y == 2 * x.astype(np.float16).astype(np.float32)).all(), np.abs(y - 2 * x).max()\n"
      "z = np.load('" + out_w + "/z.npy')\n"
      "want = np.load('" + in + "/w.npy').astype(np.float64) + np.load('" + path("b.npy") +
      "').astype(np.float64).reshape(1, 64, 1, 1)\n"
      "assert z.dtype == np.float16 and (z == want.astype(np.float16)).all(), np.abs(z - want).max()\n");
  EXPECT_EQ(checked.status, 0) << checked.out << ran_f.out << ran_w.out;
}

// A broken program exits 1 naming the rule and the line; the verdict lists each finding.
TEST_F(MilCli, ABrokenProgramExitsOneNamingTheRuleAndLine) {
  std::string text = kProgram;
  text.replace(text.find("add(x = x, y = y)"), 17, "add(x = x, y = fp16(0x1p+0))");
  const std::string p = program("bad", text);
  const CliResult check = run_orion("mil check " + p);
  EXPECT_EQ(check.status, 1) << check.out;
  EXPECT_NE(check.out.find("error ANE018 " + p + "/model.mil:5:"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("fix: "), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("the device would reject this program"), std::string::npos) << check.out;
  const CliResult run = run_orion("mil run " + p + " --out " + path("out"));
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("ANE018"), std::string::npos) << run.out;
}

// An M1/M2 target refuses the ios18 dialect that the default accepts.
TEST_F(MilCli, TheM1TargetAppliesItsRules) {
  const std::string p = program("p", kProgram);
  EXPECT_EQ(run_orion("mil check " + p).status, 0);
  const CliResult m1 = run_orion("mil check " + p + " --target m1-m2");
  EXPECT_EQ(m1.status, 1) << m1.out;
  EXPECT_NE(m1.out.find("ANE024"), std::string::npos) << m1.out;
}

TEST_F(MilCli, BadInputGetsOneClearError) {
  const std::string p = program("p", kProgram);
  CliResult r = run_orion("mil check " + path("nothing"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("nothing: not a folder"), std::string::npos) << r.out;
  r = run_orion("mil run " + p + " --inputs " + path("none") + " --out " + path("o"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("none/x.npy: missing"), std::string::npos) << r.out;
  fs::create_directories(dir_ / "wrong");
  write("wrong/x.npy", "not numpy");
  r = run_orion("mil run " + p + " --inputs " + path("wrong") + " --out " + path("o"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("wrong/x.npy: at byte 0: not a .npy file"), std::string::npos) << r.out;
  write("p/model.mil", std::string(kProgram).substr(0, 200));
  r = run_orion("mil check " + p);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(p + "/model.mil:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace orion::test
