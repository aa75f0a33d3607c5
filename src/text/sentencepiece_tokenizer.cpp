#include "text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/read_file.h"
#include "text/tokenizer_files.h"

namespace orion::text {

namespace {

constexpr std::string_view kWordMark = "\xE2\x96\x81";       // U+2581, SentencePiece's space
constexpr std::string_view kUnknown = " \xE2\x81\x87 ";       // what the library decodes <unk> to

}  // namespace

SentencePieceTokenizer SentencePieceTokenizer::from_serialized(std::string_view bytes, const std::string& source) {
  auto sp = std::make_shared<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = sp->LoadFromSerializedProto(bytes);
  } catch (const std::exception& e) {
    // The library reports most problems in its Status, but its trie builder throws (a unigram
    // piece of zero length: "failed to insert key: zero-length key", found by
    // fuzz/sentencepiece_fuzz.cpp); uncaught, it ended the process.
    throw Error::in_file(source, std::string("not a SentencePiece model: ") + e.what());
  }
  if (!status.ok()) throw Error::in_file(source, "not a SentencePiece model: " + status.ToString());
  if (sp->GetPieceSize() <= 0) throw Error::in_file(source, "the SentencePiece model has no pieces");
  SentencePieceTokenizer t;
  t.sp_ = std::move(sp);
  t.serialized_ = std::make_shared<const std::string>(bytes);
  t.source_ = source;
  return t;
}

SentencePieceTokenizer SentencePieceTokenizer::load(const std::string& path) {
  return from_serialized(read_whole_file(path), path);
}

std::vector<std::int32_t> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw Error::in_file(source_, "encoding failed: " + status.ToString());
  return {ids.begin(), ids.end()};
}

std::string SentencePieceTokenizer::decode(std::span<const std::int32_t> ids) const {
  const int n = vocab_size();
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= n)
      throw Error("token " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
                  " is outside the vocabulary of " + std::to_string(n) + " (" + source_ + ")");
  std::string text;
  const auto status = sp_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) throw Error::in_file(source_, "decoding failed: " + status.ToString());
  return text;
}

std::string SentencePieceTokenizer::piece(std::int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw Error("token " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab_size()) +
                " (" + source_ + ")");
  if (sp_->IsControl(id)) return "";
  if (sp_->IsUnknown(id)) return std::string(kUnknown);
  const std::string& p = sp_->IdToPiece(id);
  if (sp_->IsByte(id)) return std::string(1, static_cast<char>(std::stoi(p.substr(3, 2), nullptr, 16)));  // "<0xNN>"
  std::string out;
  for (std::size_t i = 0; i < p.size();) {
    if (std::string_view(p).substr(i, kWordMark.size()) == kWordMark) {
      out += ' ';
      i += kWordMark.size();
    } else {
      out += p[i++];
    }
  }
  return out;
}

int SentencePieceTokenizer::vocab_size() const { return sp_->GetPieceSize(); }

std::optional<std::int32_t> SentencePieceTokenizer::bos_id() const {
  const int id = sp_->bos_id();
  return id >= 0 ? std::optional<std::int32_t>(id) : std::nullopt;
}

std::optional<std::int32_t> SentencePieceTokenizer::eos_id() const {
  const int id = sp_->eos_id();
  return id >= 0 ? std::optional<std::int32_t>(id) : std::nullopt;
}

bool SentencePieceTokenizer::byte_fallback() const {
  for (int id = 0; id < vocab_size(); ++id)
    if (sp_->IsByte(id)) return true;
  return false;
}

void SentencePieceTokenizer::save(const std::string& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error::in_file(dir, "cannot create the folder: " + ec.message());
  write_file_atomic((std::filesystem::path(dir) / kSentencePieceFile).string(), *serialized_);
}

}  // namespace orion::text
