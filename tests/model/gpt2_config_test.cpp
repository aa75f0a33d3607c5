// config.json: what the reader refuses and how it says so.
#include "model/gpt2/gpt2_config.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace orion::model {
namespace {

std::string gpt2_config_error(const std::string& text) {
  try {
    parse_gpt2_config(text, "m/config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gpt2Config, ReadsHuggingFacesKeysAndWritesThemBack) {
  const Gpt2Config c = parse_gpt2_config(
      R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_ctx": 128, "vocab_size": 300,
          "n_inner": null, "layer_norm_epsilon": 1e-5, "eos_token_id": 299})",
      "c");
  EXPECT_EQ(c.n_positions, 128);
  EXPECT_EQ(c.hidden(), 256);
  const Gpt2Config again = parse_gpt2_config(gpt2_config_json(c), "again");
  EXPECT_EQ(again.n_embd, 64);
  EXPECT_EQ(again.eos_token_id, 299);
  // wte 300*64, wpe 128*64, per block 2*2*64 + 64*192 + 192 + 64*64 + 64 + 64*256 + 256 + 256*64 + 64,
  // the final norm 2*64.
  EXPECT_EQ(c.parameter_count(), 19200 + 8192 + 2 * 49984 + 128);
  EXPECT_EQ(c.weight_bytes(4), 4u * static_cast<std::uint64_t>(c.parameter_count()));
  EXPECT_EQ(c.kv_cache_bytes(), 2u * 2 * 128 * 64 * 4);
}

TEST(Gpt2Config, ErrorsNameTheFileTheKeyAndTheProblem) {
  EXPECT_EQ(gpt2_config_error(R"({"n_embd": 32,,})"),
            "m/config.json: at byte 14: not valid JSON: [json.exception.parse_error.101] parse error at line 1, "
            "column 15: syntax error while parsing object key - unexpected ','; expected string literal");
  EXPECT_EQ(gpt2_config_error(R"({"n_embd": 32, "n_layer": "4", "n_head": 2, "vocab_size": 10})"),
            R"(m/config.json: key "n_layer" must be an integer, not "4")");
  EXPECT_EQ(gpt2_config_error(R"({"n_embd": 32, "n_layer": 1, "n_head": 5, "vocab_size": 10})"),
            R"(m/config.json: "n_embd" (32) is not a multiple of "n_head" (5))");
}

// Found replaying a made-up input through fuzz/gpt2_config_fuzz.cpp (docs/log/reliability-fuzzing.md): a
// value nested a million deep parsed
// (nlohmann's parser is iterative) and then overflowed the stack when the error message printed
// it with dump().
TEST(Gpt2Config, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep = R"({"n_embd": )" + std::string(1'000'000, '[') + std::string(1'000'000, ']') + "}";
  // The top-level object is level 1, so the 64th '[' (at byte 11 + 63) is level 65.
  EXPECT_EQ(gpt2_config_error(deep), "m/config.json: at byte 74: JSON nested more than 64 levels deep");
  // Brackets inside strings are not nesting.
  EXPECT_EQ(gpt2_config_error(R"({"n_embd": 32, "n_layer": 1, "n_head": 2, "vocab_size": 10, "note": ")" +
                     std::string(100, '[') + R"("})"),
            "");
}

// Found by fuzz/ane_manifest_fuzz.cpp: nlohmann throws out_of_range, not parse_error, for a
// number beyond a double's range, and it escaped the reader as a foreign exception.
TEST(Gpt2Config, ANumberBeyondADoubleIsAnError) {
  EXPECT_EQ(gpt2_config_error(R"({"n_embd": 8888888888888888888888e8888888888})"),
            "m/config.json: not valid JSON: [json.exception.out_of_range.406] number overflow parsing "
            "'8888888888888888888888e8888888888'");
}

}  // namespace
}  // namespace orion::model
