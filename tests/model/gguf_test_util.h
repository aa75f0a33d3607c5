#pragma once
// What the GGUF tests share: the reference scripts run as processes (tests/reference/
// make_gguf.py, the writer; gguf_numpy.py, numpy's reader; read_gguf.mjs, Hugging Face's
// JavaScript parser), and model folders written as `orion init` writes them to make files from.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

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
// recorded when it fails).
inline std::string make_gguf(const std::string& folder, const std::string& out, const std::vector<std::string>& options = {}) {
  std::string cmd = std::string(kGgufPython) + " " + reference_script("make_gguf.py") + " '" + folder + "' '" + out + "'";
  for (const std::string& o : options) cmd += " " + o;
  const CommandResult r = run_command(cmd);
  EXPECT_EQ(r.status, 0) << cmd << ":\n" << r.output;
  const std::size_t at = r.output.rfind("sha256 ");
  return r.status == 0 && at != std::string::npos ? r.output.substr(at + 7, 64) : "";
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
