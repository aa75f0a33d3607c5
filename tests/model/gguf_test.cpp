// The GGUF reader (model/formats/gguf.h): a file written by tests/reference/make_gguf.py read as
// the writer meant it (its manifest) and as Hugging Face's JavaScript parser (npm
// @huggingface/gguf) reads it; then malformed files, each refused with an orion::Error naming
// the file and the key or tensor: every truncation of the header, and fields patched one at a
// time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/testing_temp_dir.h"
#include "error_of.h"
#include "model/formats/gguf.h"
#include "model/gguf_test_util.h"
#include "text/text_test_data.h"

namespace orion::model {
namespace {

using nlohmann::json;
using orion::testing::error_of;

std::string slurp(const std::string& path) { return text::testing::read_file(path); }

void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

class GgufFileTest : public ::testing::Test {
 protected:
  // A Qwen3-shaped model in Q8_0 (F32 norms), with its manifest.
  void SetUp() override {
    testing::write_init_folder(tmp_.file("m"), testing::small_gguf_config("qwen3", 64, 24, 160), 7);
    ASSERT_FALSE(testing::make_gguf(tmp_.file("m"), path_, {"--matrices", "Q8_0", "--manifest", tmp_.file("manifest.json")}).empty());
    bytes_ = slurp(path_);
  }

  // The file with `patch` applied, written as bad.gguf; its path.
  template <class F> std::string patched(F patch) {
    std::string b = bytes_;
    patch(b);
    spit(bad_, b);
    return bad_;
  }
  std::string open_error(const std::string& path) {
    return error_of([&] { GgufFile::open(path); });
  }

  // Where a length-prefixed string `s` of the header ends (its first byte after it).
  std::size_t after_string(const std::string& s) const {
    std::string needle(8, '\0');
    const std::uint64_t n = s.size();
    std::memcpy(needle.data(), &n, 8);
    needle += s;
    const std::size_t at = bytes_.find(needle);
    EXPECT_NE(at, std::string::npos) << s;
    return at + needle.size();
  }
  template <class T> static void put(std::string& b, std::size_t at, T v) { std::memcpy(b.data() + at, &v, sizeof v); }

  testing_util::TempDir tmp_;
  std::string path_ = tmp_.file("m.gguf"), bad_ = tmp_.file("bad.gguf");
  std::string bytes_;
};

TEST_F(GgufFileTest, ReadsWhatTheWriterMeant) {
  const json manifest = json::parse(slurp(tmp_.file("manifest.json")));
  const GgufFile g = GgufFile::open(path_);
  EXPECT_EQ(gguf_header_json(g), manifest);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.string("general.architecture"), "qwen3");
  EXPECT_EQ(g.integer("qwen3.block_count"), 2);
  EXPECT_EQ(g.real("qwen3.attention.layer_norm_rms_epsilon"), static_cast<double>(1e-6f));
  EXPECT_EQ(g.strings("tokenizer.ggml.tokens")->size(), 300u);
  EXPECT_EQ(g.find_tensor("blk.1.ffn_down.weight")->shape(), (Shape{64, 160}));
  EXPECT_EQ(g.find_tensor("blk.1.ffn_down.weight")->dims, (std::vector<std::int64_t>{160, 64}));
  EXPECT_EQ(g.find_tensor("blk.1.ffn_down.weight")->bytes, 64u * 160 / 32 * 34);
  EXPECT_EQ(g.integer("qwen3.nothing"), std::nullopt);
  EXPECT_NE(error_of([&] { g.string("qwen3.block_count"); }).find("key 'qwen3.block_count' is u32, not a string"), std::string::npos);
  EXPECT_NE(error_of([&] { g.integer("tokenizer.ggml.tokens"); }).find("is an array of string, not an integer"), std::string::npos);
}

TEST_F(GgufFileTest, HuggingFacesParserReadsWhatTheWriterMeant) {
  // The independent check of the writer: npm's parser (scripts/fetch_test_data.sh) on the file.
  const std::string parser = text::testing::test_data_file("node_modules/@huggingface/gguf/dist/index.mjs");
  ASSERT_FALSE(parser.empty());
  const std::string node_modules = parser.substr(0, parser.find("/@huggingface/"));
  const auto r = testing::run_command("node " + testing::reference_script("read_gguf.mjs") + " " + node_modules + " " + path_ + " " +
                                      tmp_.file("npm.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(json::parse(slurp(tmp_.file("npm.json"))), json::parse(slurp(tmp_.file("manifest.json"))));
}

TEST_F(GgufFileTest, AnotherAlignmentMovesTheData) {
  ASSERT_FALSE(testing::make_gguf(tmp_.file("m"), tmp_.file("a.gguf"), {"--alignment", "256", "--manifest", tmp_.file("a.json")}).empty());
  const GgufFile g = GgufFile::open(tmp_.file("a.gguf"));
  EXPECT_EQ(g.alignment(), 256u);
  EXPECT_EQ(g.data_begin() % 256, 0u);
  EXPECT_EQ(gguf_header_json(g), json::parse(slurp(tmp_.file("a.json"))));
  std::string b = slurp(tmp_.file("a.gguf"));
  const std::size_t at = b.find("general.alignment") + std::strlen("general.alignment") + 4;
  put<std::uint32_t>(b, at, 48);
  spit(bad_, b);
  EXPECT_NE(open_error(bad_).find("\"general.alignment\" is 48, not a power of two"), std::string::npos) << open_error(bad_);
}

TEST_F(GgufFileTest, EveryTruncationIsAnErrorNamingTheFile) {
  const GgufFile g = GgufFile::open(path_);
  std::vector<std::size_t> cuts;
  for (std::size_t n = 0; n < g.data_begin() + 8; ++n) cuts.push_back(n);
  for (std::size_t n : {bytes_.size() / 2, bytes_.size() - 1}) cuts.push_back(n);
  // One file cut shorter and shorter, rather than thousands written.
  spit(bad_, bytes_);
  std::sort(cuts.rbegin(), cuts.rend());
  for (std::size_t n : cuts) {
    std::filesystem::resize_file(bad_, n);
    const std::string e = open_error(bad_);
    ASSERT_EQ(e.rfind(bad_, 0), 0u) << "cut at " << n << ": " << e;
  }
  // Where the header is cut, the error says what was being read.
  spit(bad_, bytes_.substr(0, after_string("tokenizer.ggml.tokens") + 6));
  EXPECT_NE(open_error(bad_).find("the file ends inside key 'tokenizer.ggml.tokens''s element type"), std::string::npos) << open_error(bad_);
  spit(bad_, bytes_.substr(0, after_string("blk.0.attn_q.weight") + 10));
  EXPECT_NE(open_error(bad_).find("tensor 'blk.0.attn_q.weight''s dimensions"), std::string::npos) << open_error(bad_);
}

TEST_F(GgufFileTest, RefusesAnotherMagicOrVersion) {
  EXPECT_NE(open_error(patched([](std::string& b) { b[0] = 'X'; })).find("not a GGUF file"), std::string::npos);
  EXPECT_NE(open_error(patched([](std::string& b) { put<std::uint32_t>(b, 4, 1); })).find("GGUF version 1; Orion reads versions 2 and 3"),
            std::string::npos);
  EXPECT_NE(open_error(patched([](std::string& b) { put<std::uint32_t>(b, 4, 0x03000000); })).find("big-endian"), std::string::npos);
}

TEST_F(GgufFileTest, RefusesBadMetadata) {
  // A string's length past the end, an array's count past what the file can hold.
  std::string e = open_error(patched([&](std::string& b) { put<std::uint64_t>(b, after_string("general.name") + 4, 1ull << 40); }));
  EXPECT_NE(e.find("key 'general.name' is 1099511627776 bytes long, past the end of the file"), std::string::npos) << e;
  e = open_error(patched([&](std::string& b) { put<std::uint64_t>(b, after_string("tokenizer.ggml.tokens") + 8, 1ull << 40); }));
  EXPECT_NE(e.find("key 'tokenizer.ggml.tokens' is an array of 1099511627776 string values, more than the"), std::string::npos) << e;
  // An unknown value type; a bool that is neither 0 nor 1; a key twice.
  e = open_error(patched([&](std::string& b) { put<std::uint32_t>(b, after_string("general.name"), 13); }));
  EXPECT_NE(e.find("key 'general.name' has the value type 13, which GGUF does not define"), std::string::npos) << e;
  e = open_error(patched([&](std::string& b) { b[after_string("tokenizer.ggml.add_bos_token") + 4] = 2; }));
  EXPECT_NE(e.find("key 'tokenizer.ggml.add_bos_token' is a bool of value 2"), std::string::npos) << e;
  e = open_error(patched([&](std::string& b) {
    const std::size_t at = after_string("qwen3.attention.head_count") - 26;
    b.replace(at, 26, "qwen3.attention.key_length");
  }));
  EXPECT_NE(e.find("the key 'qwen3.attention.key_length' appears twice"), std::string::npos) << e;
  // A nested array.
  e = open_error(patched([&](std::string& b) { put<std::uint32_t>(b, after_string("tokenizer.ggml.token_type") + 4, 9); }));
  EXPECT_NE(e.find("an array inside an array"), std::string::npos) << e;
}

TEST_F(GgufFileTest, RefusesBadTensorInfos) {
  const std::string name = "blk.0.attn_q.weight";  // Q8_0, dims {64, 96}
  const std::size_t dims_at = after_string(name) + 4, type_at = dims_at + 16, offset_at = type_at + 4;
  auto check = [&](auto patch, const std::string& want) {
    const std::string e = open_error(patched(patch));
    EXPECT_EQ(e.rfind(bad_, 0), 0u) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
  };
  check([&](std::string& b) { put<std::uint32_t>(b, type_at, 99); },
        "tensor 'blk.0.attn_q.weight' has the type 99, which is not a ggml type Orion knows");
  check([&](std::string& b) { put<std::int64_t>(b, dims_at, 48); },
        "tensor 'blk.0.attn_q.weight' has rows of 48 values, not a multiple of Q8_0's block of 32");
  check([&](std::string& b) { put<std::int64_t>(b, dims_at, -64); }, "tensor 'blk.0.attn_q.weight' has the negative dimension -64");
  check([&](std::string& b) {
    put<std::int64_t>(b, dims_at, 1ll << 40);
    put<std::int64_t>(b, dims_at + 8, 1ll << 40);
  }, "tensor 'blk.0.attn_q.weight' has more than 2^62 values");
  check([&](std::string& b) { put<std::uint32_t>(b, after_string(name), 5); }, "tensor 'blk.0.attn_q.weight' has 5 dimensions");
  check([&](std::string& b) {
    std::uint64_t o;
    std::memcpy(&o, b.data() + offset_at, 8);
    put<std::uint64_t>(b, offset_at, o + 16);
  }, "tensor 'blk.0.attn_q.weight''s offset");
  check([&](std::string& b) { put<std::uint64_t>(b, offset_at, 1ull << 40); }, "tensor 'blk.0.attn_q.weight''s 6528 bytes at data offset");
  check([&](std::string& b) { put<std::uint64_t>(b, offset_at, 0); }, "overlap in the data section");
  check([&](std::string& b) { b.replace(after_string("blk.0.attn_k.weight") - 19, 19, name); }, "tensor 'blk.0.attn_q.weight' appears twice");
}

TEST_F(GgufFileTest, ATypeOrionDoesNotDequantiseIsRefusedWhenRead) {
  // F32 -> I32: the same bytes, so the file is well formed; reading the tensor is refused.
  const std::string path = patched([&](std::string& b) { put<std::uint32_t>(b, after_string("blk.0.attn_norm.weight") + 4 + 8, 26); });
  const GgufFile g = GgufFile::open(path);
  const std::string e = error_of([&] { g.dequantized(*g.find_tensor("blk.0.attn_norm.weight")); });
  EXPECT_NE(e.find(path + ": tensor 'blk.0.attn_norm.weight' is I32; Orion reads F32, F16, BF16, Q8_0, Q4_0"), std::string::npos) << e;
}

TEST(GgufFile, IsGgufFileLooksAtTheMagic) {
  testing_util::TempDir tmp;
  spit(tmp.file("a"), "GGUF\3\0\0\0");
  spit(tmp.file("b"), "GGU");
  EXPECT_TRUE(is_gguf_file(tmp.file("a")));
  EXPECT_FALSE(is_gguf_file(tmp.file("b")));
  EXPECT_FALSE(is_gguf_file(tmp.path()));
  EXPECT_FALSE(is_gguf_file(tmp.file("missing")));
}

}  // namespace
}  // namespace orion::model
