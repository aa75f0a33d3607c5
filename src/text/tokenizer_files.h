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

}  // namespace orion::text
