#pragma once
// The file names a tokenizer has in a model folder, in one place: the tokenizers write them
// (save), and the model folder (model/model_folder.h) finds a tokenizer by them.
namespace orion::text {

// SentencePiece's serialized model (SentencePieceTokenizer::save).
inline constexpr const char* kSentencePieceFile = "tokenizer.model";
// Byte-level BPE in Hugging Face's spelling (BpeTokenizer::save).
inline constexpr const char* kBpeVocabFile = "vocab.json";
inline constexpr const char* kBpeMergesFile = "merges.txt";
// The same two files in OpenAI's release of GPT-2.
inline constexpr const char* kOpenAiVocabFile = "encoder.json";
inline constexpr const char* kOpenAiMergesFile = "vocab.bpe";
// Hugging Face's tokenizers format (JsonTokenizer), and the config beside it that carries the
// chat template and the special tokens' roles.
inline constexpr const char* kTokenizerJsonFile = "tokenizer.json";
inline constexpr const char* kTokenizerConfigFile = "tokenizer_config.json";
// generation_config.json: the end-of-text ids generation stops at, when they differ from config.json's.
inline constexpr const char* kGenerationConfigFile = "generation_config.json";

}  // namespace orion::text
