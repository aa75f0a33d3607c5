#pragma once
// What the GGUF tests share: the reference scripts run as processes (tests/reference/
// make_gguf.py, the writer; gguf_numpy.py, numpy's reader; read_gguf.mjs, Hugging Face's
// JavaScript parser), and model folders written as `orion init` writes them to make files from.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/content_hash.h"
#include "model/llama/llama_config.h"
#include "model/llama/llama_model.h"
#include "model/model_folder.h"
#include "text/bpe_tokenizer.h"

namespace orion::model::testing {

// Debian's interpreter, which has python3-numpy (scripts/setup.sh installs it).
inline constexpr const char* kGgufPython = "/usr/bin/python3";

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.output += buf;
  r.status = pclose(p);
  return r;
}

inline std::string reference_script(const std::string& name) {
  return std::string(ORION_SOURCE_DIR) + "/tests/reference/" + name;
}

// make_gguf.py FOLDER OUT OPTIONS...: the sha256 of the file it wrote ("" and a failure
// recorded when it fails). `--manifest PATH` among the options writes the manifest there.
inline std::string run_make_gguf(const std::string& folder, const std::string& out, const std::vector<std::string>& options) {
  std::string cmd = std::string(kGgufPython) + " " + reference_script("make_gguf.py") + " '" + folder + "' '" + out + "'";
  for (const std::string& o : options) cmd += " " + o;
  const CommandResult r = run_command(cmd);
  EXPECT_EQ(r.status, 0) << cmd << ":\n" << r.output;
  const std::size_t at = r.output.rfind("sha256 ");
  return r.status == 0 && at != std::string::npos ? r.output.substr(at + 7, 64) : "";
}

// run_make_gguf's file, kept for the next test that asks for it. CTest runs every test in a
// process of its own and several start from the same file, so the files are kept, under the
// temporary folder, by a hash of all that makes them: the folder's files, the options and the
// reference scripts' text. A file is put there whole (written beside, renamed, its hash last),
// so concurrent tests see it or make it themselves.
inline std::string make_gguf(const std::string& folder, const std::string& out, const std::vector<std::string>& options = {}) {
  namespace fs = std::filesystem;
  ContentHasher h;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    h.update(f.filename().string());
    h.update_file(f.string());
  }
  for (const char* script : {"make_gguf.py", "gguf_numpy.py", "hf_folder.py"}) h.update_file(reference_script(script));
  std::string manifest;
  std::vector<std::string> flags;
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (options[i] == "--manifest" && i + 1 < options.size()) {
      manifest = options[++i];
      h.update("--manifest");
      continue;
    }
    h.update(options[i]);
    flags.push_back(options[i]);
  }
  const fs::path cache = fs::temp_directory_path() / ("orion-gguf-tests-" + std::to_string(::getuid()));
  const std::string key = (cache / h.hex()).string();
  const auto read = [](const std::string& path) {
    std::ifstream f(path);
    std::string sha;
    f >> sha;
    return sha;
  };
  if (!fs::exists(key + ".sha256")) {
    fs::create_directories(cache);
    const std::string part = key + "." + std::to_string(::getpid());
    if (!manifest.empty()) flags.insert(flags.end(), {"--manifest", "'" + part + ".json'"});
    const std::string sha = run_make_gguf(folder, part + ".gguf", flags);
    if (sha.empty()) return "";
    std::ofstream(part + ".sha256") << sha;
    if (!manifest.empty()) fs::rename(part + ".json", key + ".json");
    fs::rename(part + ".gguf", key + ".gguf");
    fs::rename(part + ".sha256", key + ".sha256");
  }
  fs::copy_file(key + ".gguf", out, fs::copy_options::overwrite_existing);
  if (!manifest.empty()) fs::copy_file(key + ".json", manifest, fs::copy_options::overwrite_existing);
  return read(key + ".sha256");
}

// A Llama-family folder as `orion init` writes one: config, the seed's weights, GPT-2's
// byte-level tokenizer (256 bytes and <|endoftext|>).
inline void write_init_folder(const std::string& dir, const LlamaConfig& c, std::uint64_t seed) {
  write_model_folder(dir, llama_init_weights(c, seed), llama_config_json(c), text::BpeTokenizer::byte_level());
}

// A small model of `arch`: 2 layers of width `dim`, 4 heads on 2 key/value heads, vocabulary 300.
inline LlamaConfig small_gguf_config(const std::string& arch, std::int64_t dim, std::int64_t head_dim, std::int64_t hidden) {
  LlamaConfig c;
  c.model_type = arch;
  c.num_hidden_layers = 2;
  c.hidden_size = dim;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_size = head_dim;
  c.intermediate_size = hidden;
  c.max_position_embeddings = 64;
  c.vocab_size = 300;
  c.rope_theta = 1e6;
  c.qk_norm = arch == "qwen3";
  c.qkv_bias = arch == "qwen2";
  c.bos_token_id.reset();
  c.eos_token_ids = {256};
  return c;
}

}  // namespace orion::model::testing
