#pragma once
// A SentencePiece model (the ModelProto protobuf that tokenizer.model holds) written from its
// pieces: how a vocabulary stored elsewhere (a GGUF file's tokens, scores and types) becomes a
// tokenizer the SentencePiece library runs, instead of a second implementation of its
// encoding. Only the fields encoding reads are written (sentencepiece_model.proto's numbers):
// the pieces, the model type, byte fallback, whitespace-only pieces, the special pieces' names
// and the normaliser's switches.
#include <cstdint>
#include <string>
#include <vector>

namespace orion::text {

struct SentencePieceSpec {
  // ModelProto.SentencePiece.Type: NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5,
  // BYTE 6 (the numbers GGUF's token_type uses too).
  struct Piece {
    std::string text;
    float score = 0;
    int type = 1;
  };
  std::vector<Piece> pieces;
  bool bpe = true;  // TrainerSpec.model_type BPE, else UNIGRAM
  bool byte_fallback = false;
  bool allow_whitespace_only_pieces = true;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = false;
  // The special pieces by their text ("" leaves the library's default name).
  std::string unk_piece, bos_piece, eos_piece, pad_piece;
};

// The serialized ModelProto, for SentencePieceTokenizer::from_serialized (which checks it).
std::string sentencepiece_model_proto(const SentencePieceSpec& spec);

}  // namespace orion::text
