#pragma once
// A GGUF file's tokenizer, from its tokenizer.* metadata, as one of the tokenizers a model
// folder has (text/): tokenizer.ggml.model "gpt2" (byte-level BPE: tokens, merges, token
// types, the pre-tokenizer tokenizer.ggml.pre names) becomes the tokenizer.json Hugging Face's
// library would run for it (text/hf), "llama" (SentencePiece: tokens, scores, token types) the
// SentencePiece model the library runs (text/sentencepiece_proto.h). The ids are the original
// tokenizer's: the tests compare them with the tokenizer.json or tokenizer.model the file was
// made from. Which tokens start a text and end generation, and the chat template, come from the
// same keys. docs/MODELS.md lists what is read.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/formats/gguf.h"
#include "text/tokenizer.h"

namespace orion::model {

struct GgufTokenizer {
  std::shared_ptr<const text::Tokenizer> tokenizer;
  // tokenizer.chat_template ("" when the file has none) and the special tokens' texts the
  // template sees by name (bos_token, eos_token, unk_token, pad_token).
  std::string chat_template;
  nlohmann::json special_tokens = nlohmann::json::object();
};

// Throws orion::Error naming the file and the key: no tokenizer.ggml.model, a model or
// pre-tokenizer Orion does not read (the message lists those it does), arrays of other lengths
// than the tokens', a merge or special id that is not a token.
GgufTokenizer read_gguf_tokenizer(const GgufFile& g);

// Whether a text starts with tokenizer.ggml.bos_token_id: tokenizer.ggml.add_bos_token, or
// llama.cpp's default for the tokenizer (SentencePiece and Llama 3's pre-tokenizer: yes).
bool gguf_adds_bos(const GgufFile& g);
// The ids generation stops at: tokenizer.ggml.eos_token_id, then the end-of-turn and
// end-of-message ids (eot_token_id, eom_token_id) when the file has them, then the control
// tokens llama.cpp ends generation at by their text (<|im_end|>, <|endoftext|>, <|eot_id|>...).
// Throws orion::Error naming the file when it has no eos_token_id.
std::vector<std::int64_t> gguf_stop_ids(const GgufFile& g);

}  // namespace orion::model
