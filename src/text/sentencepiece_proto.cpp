#include "text/sentencepiece_proto.h"

#include <cstring>

namespace orion::text {

namespace {

// Protocol buffers' wire format: a key (field number << 3 | wire type), then a varint (type 0),
// a length and bytes (type 2) or four little-endian bytes (type 5).
void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void key(std::string& out, int field, int wire) { varint(out, static_cast<std::uint64_t>(field) << 3 | static_cast<unsigned>(wire)); }

void int_field(std::string& out, int field, std::int64_t v) {
  key(out, field, 0);
  varint(out, static_cast<std::uint64_t>(v));  // negative int32s as ten bytes, as protobuf writes them
}

void bytes_field(std::string& out, int field, const std::string& bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

void float_field(std::string& out, int field, float v) {
  key(out, field, 5);
  char b[4];
  std::memcpy(b, &v, 4);  // little-endian, as every platform Orion builds for
  out.append(b, 4);
}

}  // namespace

std::string sentencepiece_model_proto(const SentencePieceSpec& spec) {
  std::string out;
  for (const SentencePieceSpec::Piece& p : spec.pieces) {
    std::string m;
    bytes_field(m, 1, p.text);
    float_field(m, 2, p.score);
    int_field(m, 3, p.type);
    bytes_field(out, 1, m);  // ModelProto.pieces
  }
  std::string trainer;
  int_field(trainer, 3, spec.bpe ? 2 : 1);  // model_type
  int_field(trainer, 4, static_cast<std::int64_t>(spec.pieces.size()));  // vocab_size
  int_field(trainer, 26, spec.allow_whitespace_only_pieces);
  int_field(trainer, 35, spec.byte_fallback);
  const std::pair<int, const std::string*> names[] = {
      {45, &spec.unk_piece}, {46, &spec.bos_piece}, {47, &spec.eos_piece}, {48, &spec.pad_piece}};
  for (const auto& [field, name] : names)
    if (!name->empty()) bytes_field(trainer, field, *name);
  bytes_field(out, 2, trainer);  // ModelProto.trainer_spec
  std::string normalizer;
  bytes_field(normalizer, 1, "identity");  // name: no character mapping
  int_field(normalizer, 3, spec.add_dummy_prefix);
  int_field(normalizer, 4, spec.remove_extra_whitespaces);
  int_field(normalizer, 5, 1);  // escape_whitespaces: spaces as U+2581
  bytes_field(out, 3, normalizer);  // ModelProto.normalizer_spec
  return out;
}

}  // namespace orion::text
