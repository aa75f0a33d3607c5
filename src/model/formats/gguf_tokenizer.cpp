#include "model/formats/gguf_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "text/hf/hf_tokenizer.h"
#include "text/sentencepiece_proto.h"
#include "text/sentencepiece_tokenizer.h"

namespace orion::model {

using nlohmann::json;

namespace {

// tokenizer.ggml.token_type's values (llama.cpp's llama_token_type, SentencePiece's numbers).
constexpr std::int64_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kByte = 6;

// What llama.cpp's tokenizer.ggml.pre names stand for, as the tokenizer.json of the models it
// names spells it (Qwen2's and Llama 3's files, GPT-2's ByteLevel pre-tokenizer).
struct PreTokenizer {
  json normalizer, pre_tokenizer;
  bool ignore_merges = false;  // Llama 3's BPE takes a whole word in the vocabulary as it is
  bool clean_up_spaces = true;  // decoding as transformers' clean_up_tokenization_spaces
  bool adds_bos = false;        // llama.cpp's default of add_bos_token
};

json split_then_bytes(const char* regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
}

std::optional<PreTokenizer> pre_tokenizer_named(std::string_view pre) {
  static constexpr const char* kQwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static constexpr const char* kLlama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pre == "qwen2" || pre == "deepseek-r1-qwen")
    return PreTokenizer{{{"type", "NFC"}}, split_then_bytes(kQwen2), false, false, false};
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe")
    return PreTokenizer{nullptr, split_then_bytes(kLlama3), true, true, true};
  // A file without tokenizer.ggml.pre ("default" to llama.cpp) is read as GPT-2's byte-level
  // pre-tokenizer, which is what Hugging Face's ByteLevel does by default.
  if (pre == "gpt-2" || pre == "default" || pre.empty())
    return PreTokenizer{nullptr, {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}},
                        false, true, false};
  return std::nullopt;
}

// The keys the tokenizer is made of, read and checked once.
struct Vocab {
  std::string path;
  std::string model, pre;
  std::vector<std::string> tokens;
  std::vector<std::int64_t> types;
  std::vector<double> scores;
  std::optional<std::int64_t> bos, eos, unk, pad;
};

Error bad(const Vocab& v, const std::string& what) { return Error::in_file(v.path, what); }

Vocab read_vocab(const GgufFile& g) {
  Vocab v;
  v.path = g.path();
  const std::optional<std::string> model = g.string("tokenizer.ggml.model");
  if (!model) throw bad(v, "has no tokenizer (no key \"tokenizer.ggml.model\")");
  v.model = *model;
  if (v.model != "gpt2" && v.model != "llama")
    throw bad(v, "key \"tokenizer.ggml.model\" is " + in_quotes(v.model) +
                     "; Orion reads \"gpt2\" (byte-level BPE) and \"llama\" (SentencePiece) tokenizers");
  v.pre = g.string("tokenizer.ggml.pre").value_or("");
  const std::optional<std::vector<std::string>> tokens = g.strings("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty()) throw bad(v, "has no tokens (key \"tokenizer.ggml.tokens\")");
  if (tokens->size() >= (std::size_t{1} << 30)) throw bad(v, "key \"tokenizer.ggml.tokens\" lists more than 2^30 tokens");
  v.tokens = *tokens;
  const std::size_t n = v.tokens.size();
  v.types = g.integers("tokenizer.ggml.token_type").value_or(std::vector<std::int64_t>(n, kNormal));
  v.scores = g.reals("tokenizer.ggml.scores").value_or(std::vector<double>(n, 0.0));
  for (const auto& [key, size] : {std::pair<const char*, std::size_t>{"tokenizer.ggml.token_type", v.types.size()},
                                  {"tokenizer.ggml.scores", v.scores.size()}})
    if (size != n)
      throw bad(v, "key " + in_quotes(key) + " has " + std::to_string(size) + " entries for " + std::to_string(n) + " tokens");
  for (std::size_t i = 0; i < n; ++i)
    if (v.types[i] < kNormal || v.types[i] > kByte)
      throw bad(v, "key \"tokenizer.ggml.token_type\" gives token " + std::to_string(i) + " the type " + std::to_string(v.types[i]) +
                       " (1-6)");
  auto id = [&](const char* key) -> std::optional<std::int64_t> {
    const std::optional<std::int64_t> x = g.integer(key);
    if (x && (*x < 0 || *x >= static_cast<std::int64_t>(n)))
      throw bad(v, "key " + in_quotes(key) + " is " + std::to_string(*x) + ", not a token id (0-" + std::to_string(n - 1) + ")");
    return x;
  };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unk = id("tokenizer.ggml.unknown_token_id");
  v.pad = id("tokenizer.ggml.padding_token_id");
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) id(key);
  if (g.boolean("tokenizer.ggml.add_eos_token").value_or(false))
    throw bad(v, "key \"tokenizer.ggml.add_eos_token\" is true; Orion puts no token after a text");
  return v;
}

// `s` as a JSON string; a token that is not UTF-8 cannot be one, and is refused by its index.
void append_json_string(std::string& out, const std::string& s, const Vocab& v, const std::string& where) {
  try {
    out += json(s).dump();
  } catch (const json::exception&) {
    throw bad(v, where + " is not valid UTF-8: " + printable(s, true));
  }
}

std::string dump_checked(const json& j, const Vocab& v, const std::string& where) {
  try {
    return j.dump();
  } catch (const json::exception&) {
    throw bad(v, where + " holds text that is not valid UTF-8");
  }
}

json special_tokens_of(const Vocab& v) {
  json s = json::object();
  const std::pair<const char*, const std::optional<std::int64_t>*> roles[] = {
      {"bos_token", &v.bos}, {"eos_token", &v.eos}, {"unk_token", &v.unk}, {"pad_token", &v.pad}};
  for (const auto& [name, id] : roles)
    if (*id) s[name] = v.tokens[static_cast<std::size_t>(**id)];
  return s;
}

// The "gpt2" model as the tokenizer.json Hugging Face's library would run: NORMAL tokens (and
// the others but CONTROL and USER_DEFINED) in model.vocab, the merges as pairs, the CONTROL and
// USER_DEFINED tokens as added tokens found in the raw text.
std::shared_ptr<const text::Tokenizer> byte_level_tokenizer(const GgufFile& g, const Vocab& v, bool add_bos,
                                                            const std::string& chat_template) {
  const std::optional<PreTokenizer> pre = pre_tokenizer_named(v.pre);
  if (!pre)
    throw bad(v, "key \"tokenizer.ggml.pre\" is " + in_quotes(v.pre) +
                     "; Orion reads the pre-tokenizers \"qwen2\", \"llama-bpe\" (Llama 3) and \"gpt-2\"");
  const std::vector<std::string> merges = g.strings("tokenizer.ggml.merges").value_or(std::vector<std::string>{});
  json added = json::array();
  std::string vocab = "{";
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    const std::string where = "tokenizer.ggml.tokens[" + std::to_string(i) + "]";
    // llama.cpp's converter fills the ids a tokenizer does not use up to the model's vocabulary
    // as USER_DEFINED "[PAD<id>]": kept as ordinary tokens, which no text encodes to, as the
    // original tokenizer has no such tokens to find in a text.
    const bool filler = t == "[PAD" + std::to_string(i) + "]";
    if ((v.types[i] == kControl || v.types[i] == kUserDefined) && !filler && !t.empty()) {
      added.push_back({{"id", i}, {"content", t}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}, {"special", v.types[i] == kControl}});
      continue;
    }
    if (vocab.size() > 1) vocab += ',';
    append_json_string(vocab, t, v, where);
    vocab += ':' + std::to_string(i);
  }
  vocab += '}';
  std::string merge_list = "[";
  for (std::size_t r = 0; r < merges.size(); ++r) {
    // Split at the first space after the first byte, as llama.cpp does.
    const std::size_t cut = merges[r].find(' ', 1);
    const std::string where = "tokenizer.ggml.merges[" + std::to_string(r) + "]";
    if (cut == std::string::npos) throw bad(v, where + " " + in_quotes(merges[r]) + " is not two tokens separated by a space");
    merge_list += r ? ",[" : "[";
    append_json_string(merge_list, merges[r].substr(0, cut), v, where);
    merge_list += ',';
    append_json_string(merge_list, merges[r].substr(cut + 1), v, where);
    merge_list += ']';
  }
  merge_list += ']';
  json post = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  if (add_bos) {
    if (!v.bos) throw bad(v, "texts start with a BOS token (tokenizer.ggml.add_bos_token) but there is no tokenizer.ggml.bos_token_id");
    const std::string& b = v.tokens[static_cast<std::size_t>(*v.bos)];
    post = {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"special_tokens", {{b, {{"id", b}, {"ids", {*v.bos}}, {"tokens", {b}}}}}}};
  }
  const json decoder = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  const std::string text = "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":" +
                           dump_checked(added, v, "tokenizer.ggml.tokens") + ",\"normalizer\":" + pre->normalizer.dump() +
                           ",\"pre_tokenizer\":" + pre->pre_tokenizer.dump() + ",\"post_processor\":" +
                           dump_checked(post, v, "tokenizer.ggml.tokens") + ",\"decoder\":" + decoder.dump() +
                           ",\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":\"\","
                           "\"end_of_word_suffix\":\"\",\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":" +
                           (pre->ignore_merges ? "true" : "false") + ",\"vocab\":" + vocab + ",\"merges\":" + merge_list + "}}";
  // tokenizer_config.json's part: the special tokens' roles, decoding's clean-up, the template
  // (so that the tokenizer saved into a folder is that folder's whole tokenizer).
  json config = special_tokens_of(v);
  config["clean_up_tokenization_spaces"] = pre->clean_up_spaces;
  config["add_bos_token"] = add_bos;
  if (!chat_template.empty()) config["chat_template"] = chat_template;
  return std::make_shared<const text::HfTokenizer>(
      text::HfTokenizer::from_json(text, dump_checked(config, v, "tokenizer.chat_template"), v.path));
}

// The "llama" model as the SentencePiece model its tokens, scores and types came from: BPE
// (merged by the pieces' scores, as llama.cpp does), Llama's normaliser (no character mapping,
// spaces kept, a space put before the text unless tokenizer.ggml.add_space_prefix is false).
std::shared_ptr<const text::Tokenizer> sentencepiece_tokenizer(const GgufFile& g, const Vocab& v) {
  text::SentencePieceSpec spec;
  spec.add_dummy_prefix = g.boolean("tokenizer.ggml.add_space_prefix").value_or(true);
  spec.pieces.reserve(v.tokens.size());
  bool has_unknown = false;
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    spec.pieces.push_back({v.tokens[i], static_cast<float>(v.scores[i]), static_cast<int>(v.types[i])});
    has_unknown = has_unknown || v.types[i] == kUnknown;
    spec.byte_fallback = spec.byte_fallback || v.types[i] == kByte;
  }
  // SentencePiece needs its unknown piece; a file without types names it by id alone.
  if (!has_unknown) {
    if (!v.unk) throw bad(v, "the SentencePiece tokenizer has no unknown token (no token of type 2, no tokenizer.ggml.unknown_token_id)");
    spec.pieces[static_cast<std::size_t>(*v.unk)].type = static_cast<int>(kUnknown);
  }
  auto name = [&](const std::optional<std::int64_t>& id) { return id ? v.tokens[static_cast<std::size_t>(*id)] : std::string(); };
  spec.unk_piece = name(v.unk);
  spec.bos_piece = name(v.bos);
  spec.eos_piece = name(v.eos);
  spec.pad_piece = name(v.pad);
  return std::make_shared<const text::SentencePieceTokenizer>(text::SentencePieceTokenizer::from_serialized(
      text::sentencepiece_model_proto(spec), v.path + ": tokenizer.ggml.tokens"));
}

}  // namespace

bool gguf_adds_bos(const GgufFile& g) {
  if (const std::optional<bool> b = g.boolean("tokenizer.ggml.add_bos_token")) return *b;
  const std::string model = g.string("tokenizer.ggml.model").value_or("");
  if (model == "llama") return true;
  const std::optional<PreTokenizer> pre = pre_tokenizer_named(g.string("tokenizer.ggml.pre").value_or(""));
  return model == "gpt2" && pre && pre->adds_bos;
}

std::vector<std::int64_t> gguf_stop_ids(const GgufFile& g) {
  const std::optional<std::int64_t> eos = g.integer("tokenizer.ggml.eos_token_id");
  if (!eos) throw Error::in_file(g.path(), "has no key \"tokenizer.ggml.eos_token_id\": the token generation stops at");
  std::vector<std::int64_t> ids = {*eos};
  auto add = [&](std::int64_t id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (const std::optional<std::int64_t> id = g.integer(key)) add(*id);
  // The end-of-turn and end-of-text tokens llama.cpp stops at by their text, when they are
  // control tokens: a chat model's file names <|im_end|> its EOS, and its base model's
  // <|endoftext|> ends a text too (Hugging Face lists both in generation_config.json).
  static constexpr std::string_view kEndTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>",  "<end_of_turn>", "<|endoftext|>",
                                                   "<|eom_id|>", "<EOT>",      "_<EOT>"};
  const GgufValue* tokens = g.find("tokenizer.ggml.tokens");
  const GgufValue* types = g.find("tokenizer.ggml.token_type");
  if (tokens && tokens->is_array() && tokens->element == GgufType::string)
    for (std::size_t i = 0; i < tokens->strings.size(); ++i) {
      const bool control = !types || !types->is_array() || i >= types->ints.size() || types->ints[i] == kControl;
      if (control && std::find(std::begin(kEndTexts), std::end(kEndTexts), tokens->strings[i]) != std::end(kEndTexts))
        add(static_cast<std::int64_t>(i));
    }
  return ids;
}

GgufTokenizer read_gguf_tokenizer(const GgufFile& g) {
  const Vocab v = read_vocab(g);
  GgufTokenizer out;
  out.chat_template = g.string("tokenizer.chat_template").value_or("");
  out.special_tokens = special_tokens_of(v);
  out.tokenizer = v.model == "gpt2" ? byte_level_tokenizer(g, v, gguf_adds_bos(g), out.chat_template) : sentencepiece_tokenizer(g, v);
  return out;
}

}  // namespace orion::model
