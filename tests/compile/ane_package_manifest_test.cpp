// The package manifest as untrusted input: a real manifest (a tiny GPT-2 compiled) read back
// equal, then broken field by field, truncated and mutated: every reading gives the manifest or
// an orion::Error naming the file, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/gpt2_test_config.h"
#include "compile/ane/ane_package_writer.h"
#include "core/error.h"
#include "core/random.h"
#include "core/testing_temp_dir.h"
#include "model/decoder_ane_package.h"
#include "model/gpt2/gpt2_model.h"

namespace orion::compile {
namespace {

using nlohmann::json;

class Manifest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing_util::TempDir;
    const model::Gpt2Config c =
        model::testing::small_gpt2_config({.layers = 1, .dim = 32, .vocab = 50, .positions = 40});
    const TensorMap w = model::gpt2_init_weights(c, 1);
    write_ane_package(model::gpt2_ane_programs(c, {.window = 8}), w, {}, dir_->path() + "/pkg",
                      model::gpt2_package_model_info(c, "test"));
    std::ifstream in(dir_->path() + "/pkg/manifest.json");
    std::stringstream ss;
    ss << in.rdbuf();
    text_ = new std::string(ss.str());
  }
  static void TearDownTestSuite() {
    delete text_;
    delete dir_;
  }
  static std::string error_of(const json& j) {
    try {
      manifest_from_json(j, "m.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  static testing_util::TempDir* dir_;
  static std::string* text_;
};

testing_util::TempDir* Manifest::dir_ = nullptr;
std::string* Manifest::text_ = nullptr;

TEST_F(Manifest, ReadsBackWhatWasWritten) {
  const PackageManifest m = read_manifest(dir_->path() + "/pkg");
  EXPECT_EQ(manifest_to_json(m), json::parse(*text_));
  ASSERT_EQ(m.programs.size(), 2u);
  EXPECT_EQ(m.program("decode").session["capacity"], 32);  // 39 rounded down to 32: the cache stays on the device
  EXPECT_THROW(m.program("train"), Error);
}

// A runtime weight's input names its param, and reads back; only a fixed-length input can be one.
TEST_F(Manifest, RuntimeWeightInputsReadBack) {
  json j = json::parse(*text_);
  json* fixed = nullptr;
  json* token = nullptr;
  for (auto& p : j["programs"])
    for (auto& s : p["steps"])
      if (s.contains("io"))
        for (auto& t : s["io"]["inputs"]) (t.contains("fixed") ? fixed : token) = &t;
  ASSERT_TRUE(fixed && token);
  (*fixed)["weight"] = "h.0.attn.c_attn.weight";
  const PackageManifest m = manifest_from_json(j, "m.json");
  EXPECT_EQ(manifest_to_json(m), j);
  int weights = 0;
  for (const auto& p : m.programs)
    for (const auto& s : p.steps)
      for (const KernelIoTensor& t : s.io.inputs) weights += t.weight == "h.0.attn.c_attn.weight";
  EXPECT_EQ(weights, 1);
  (*token)["weight"] = "h.0.attn.c_attn.weight";
  EXPECT_NE(error_of(j).find("a runtime weight is a fixed-length input"), std::string::npos) << error_of(j);
}

TEST_F(Manifest, EveryBrokenFieldIsNamed) {
  const json good = json::parse(*text_);
  struct Case {
    const char* pointer;
    json value;
    const char* says;
  };
  const Case cases[] = {
      {"/version", 2, "at /version: this Orion reads version 3"},
      {"/format", "zip", "at /format"},
      {"/dialect", "ios99", "at /dialect"},
      {"/target/on_chip_bytes", -1, "at /target/on_chip_bytes: expected at least 1"},
      {"/target/weights", "int3", "at /target/weights: \"int3\" is not fp16, int8, int4, uint4 or lut4"},
      {"/target/weight_block", -1, "at /target/weight_block: expected at least 0"},
      {"/programs/0/steps/0/kind", "gpu", "at /programs/0/steps/0/kind"},
      {"/programs/0/steps/0/name", "../etc", "not a plain folder name"},
      {"/programs/0/steps/1/io/padded_seq", "32", "at /programs/0/steps/1/io/padded_seq: expected an integer"},
      {"/programs/0/steps/1/io/inputs/0/padded", json::array({1, 32, 1}), "[1, C, 1, S]"},
      {"/programs/0/steps/1/io/inputs/0/logical/1", 0, "expected a positive dimension"},
      {"/programs/0/inputs/0/dtype", "f64", "unknown dtype"},
      {"/host_weights/tensors/0/offset", 3, "expected at least 64"},
      {"/programs", json::array(), "at least one program"},
      {"/programs/0/steps/1/kernel", "../x", "not a plain folder name"},
      {"/programs/0/steps/1/weights", "fused", "expected \"baked\" or \"inputs\""},
      {"/programs/0/steps/1/bind", json::object(), "does not bind"},
      {"/device_weights", json::object({{"file", "w.bin"}, {"tensors", json::array()}}), "unexpected file name"},
  };
  for (const Case& c : cases) {
    json j = good;
    j[json::json_pointer(c.pointer)] = c.value;
    const std::string e = error_of(j);
    EXPECT_NE(e.find("m.json: "), std::string::npos) << c.pointer << ": " << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << c.pointer << ": " << e;
  }
  json j = good;
  j["programs"][0]["steps"][1]["io"].erase("outputs");
  EXPECT_NE(error_of(j).find("missing \"outputs\""), std::string::npos) << error_of(j);
  j = good;
  auto& ins = j["programs"][0]["steps"][1]["io"]["inputs"];
  if (ins.size() >= 2) {
    std::swap(ins[0], ins[1]);
    EXPECT_NE(error_of(j).find("binding (alphabetical) order"), std::string::npos) << error_of(j);
  }
}

// Steps that share a kernel (weights as inputs) bind its I/O names to theirs; a second step
// naming the kernel with other I/O would bind garbage (ANE027) and is refused.
TEST_F(Manifest, SharedKernelsBindTheirStepsNames) {
  json j = json::parse(*text_);
  json& step = j["programs"][0]["steps"][1];
  json bind = json::object();
  for (const char* dir : {"inputs", "outputs"})
    for (const json& t : step["io"][dir]) bind[t["name"].get<std::string>()] = "step_" + t["name"].get<std::string>();
  step["kernel"] = step["name"];
  step["bind"] = bind;
  step["weights"] = "inputs";
  const PackageManifest m = manifest_from_json(j, "m.json");
  EXPECT_EQ(manifest_to_json(m), j);
  const PackageStep& s = m.programs[0].steps[1];
  EXPECT_EQ(kernel_folder(s), s.name);
  EXPECT_EQ(s.weights, KernelWeights::inputs);
  const KernelIo bound = bound_io(s);
  ASSERT_EQ(bound.inputs.size(), s.io.inputs.size());
  for (std::size_t i = 0; i < bound.inputs.size(); ++i) EXPECT_EQ(bound.inputs[i].name, "step_" + s.io.inputs[i].name);
  EXPECT_EQ(bound.outputs[0].name, "step_" + s.io.outputs[0].name);

  // The decode program's first kernel step naming prefill's kernel, with decode's I/O.
  json& other = j["programs"][1]["steps"][1];
  ASSERT_EQ(other["kind"], "ane");
  other["kernel"] = step["name"];
  EXPECT_NE(error_of(j).find("which runs the same kernel " + step["name"].get<std::string>()), std::string::npos)
      << error_of(j);
}

TEST_F(Manifest, TruncatedAndMutatedTextGivesErrorsNotCrashes) {
  const std::string path = dir_->path() + "/pkg/manifest.json";
  auto read_text = [&](const std::string& t) {
    {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << t;
    }
    try {
      read_manifest(dir_->path() + "/pkg");
      return true;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("manifest.json"), std::string::npos) << e.what();
      return false;
    }
  };
  int rejected = 0;
  for (std::size_t cut = 0; cut < text_->size(); cut += std::max<std::size_t>(1, text_->size() / 300))
    rejected += !read_text(text_->substr(0, cut));
  EXPECT_GT(rejected, 250);
  Rng rng(4);
  for (int i = 0; i < 400; ++i) {
    std::string t = *text_;
    for (int k = 0; k < 3; ++k) t[rng.next_u64() % t.size()] = static_cast<char>(rng.next_u64() % 128);
    read_text(t);  // accepted or an Error; a crash fails the test binary
  }
  read_text(*text_);
}

// Found by fuzz/ane_manifest_fuzz.cpp (docs/log/reliability-fuzzing.md), the crashing input: nlohmann throws
// out_of_range, not parse_error, for a number beyond a double's range, and it escaped.
TEST_F(Manifest, ANumberBeyondADoubleIsAnError) {
  std::filesystem::create_directories(dir_->path() + "/big");
  std::ofstream(dir_->path() + "/big/manifest.json", std::ios::binary)
      << std::string("{\n  \"dialect\":8888888888888888888888e8888888888hapeckage\",\n \0\0\0ist    \"name\": #t    \"", 85);
  try {
    read_manifest(dir_->path() + "/big");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("big/manifest.json: not valid JSON: [json.exception.out_of_range.406] number "
                                         "overflow parsing '8888888888888888888888e8888888888'"),
              std::string::npos)
        << e.what();
  }
}

// Found replaying a made-up input through fuzz/ane_manifest_fuzz.cpp (docs/log/reliability-fuzzing.md): a value nested a million deep parsed
// (nlohmann's parser is iterative) and then overflowed the stack when the manifest copied it.
TEST_F(Manifest, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string path = dir_->path() + "/deep/manifest.json";
  std::filesystem::create_directories(dir_->path() + "/deep");
  const std::size_t model_at = text_->find("\"model\": {");
  ASSERT_NE(model_at, std::string::npos);
  const std::string deep = text_->substr(0, model_at) + "\"model\": " + std::string(1'000'000, '[') +
                           std::string(1'000'000, ']') + ", \"x\": {" + text_->substr(model_at + 10);
  std::ofstream(path, std::ios::binary) << deep;
  try {
    read_manifest(dir_->path() + "/deep");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("manifest.json: at byte " + std::to_string(model_at + 9 + 63) +
                                         ": JSON nested more than 64 levels deep"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace orion::compile
