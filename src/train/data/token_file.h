#pragma once
// Token files: a tokenized corpus split into a training and a validation part, the input of the
// trainer's data loader (docs/FORMATS.md, "Token files", is the format's specification).
//
//   offset  size  field
//        0     8  magic "ORIONTOK"
//        8     4  version (1), u32
//       12     4  token width in bytes: 2 (u16 tokens) or 4 (u32 tokens), u32
//       16     8  vocabulary size: every token is below it, u64
//       24     8  training tokens, u64
//       32     8  validation tokens, u64
//       40     8  end-of-text token id, or 2^64 - 1 when the corpus has none, u64
//       48    16  XXH3-128 of the token bytes (everything after the header)
//       64        training tokens, then validation tokens; nothing after them
//
// Every integer is little-endian. The width is 2 exactly when the vocabulary fits in 16 bits.
//
// Version 2, a record file (JSONL data, train/data/jsonl_records.h), keeps the first 48 bytes,
// hashes everything after a 128-byte header, and adds:
//       64     8  test tokens, u64
//       72    24  records of the training, validation and test splits, u64 each
//       96    32  zero
//      128        the tokens of the three splits; then one mask byte per token (1: a target
//                 the loss covers, 0: context only), in the same order; then each split's
//                 records' first tokens (u64, from 0 within the split, increasing)
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "train/data/records.h"

namespace orion::train {

enum class Split { train, val, test };
const char* split_name(Split split);

inline constexpr std::uint64_t kTokenFileHeaderBytes = 64;
inline constexpr std::uint32_t kTokenFileVersion = 1;
inline constexpr std::uint32_t kRecordFileVersion = 2;
inline constexpr std::uint64_t kRecordFileHeaderBytes = 128;

struct TokenFileHeader {
  std::uint32_t version = kTokenFileVersion;
  std::uint32_t width = 2;
  std::uint64_t vocab_size = 0;
  std::uint64_t train_tokens = 0;
  std::uint64_t val_tokens = 0;
  std::optional<std::uint64_t> eot_id;
  std::uint64_t test_tokens = 0;   // version 2 only
  std::uint64_t records[3] = {};  // version 2: per split
};

// The token width a vocabulary needs: 2 when every id fits in a u16, else 4.
std::uint32_t token_width_for(std::uint64_t vocab_size);

// Writes a token file atomically (a crash leaves the old file or none, never a torn one).
// Throws orion::Error naming `path` when a token is negative or not below `vocab_size`, or when
// the vocabulary is empty or does not fit in 32 bits.
void write_token_file(const std::string& path, std::uint64_t vocab_size, std::optional<std::uint64_t> eot_id,
                      std::span<const std::int32_t> train, std::span<const std::int32_t> val);

// Writes a record file (version 2) atomically; the same checks, and each split's records and
// mask must be consistent (Records' invariants).
void write_record_file(const std::string& path, std::uint64_t vocab_size, std::optional<std::uint64_t> eot_id,
                       const Records& train, const Records& val, const Records& test);

// A token file, memory-mapped and checked as untrusted input when opened: magic, version,
// width against the vocabulary, both counts against the file's length, the checksum, and every
// token against the vocabulary size. Errors are orion::Errors naming the file, the byte offset
// and the problem. Copies share the mapping, so a copy keeps the file alive.
class TokenFile {
 public:
  static TokenFile open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  const TokenFileHeader& header() const { return header_; }
  std::uint64_t vocab_size() const { return header_.vocab_size; }
  std::uint64_t size(Split split) const {
    return split == Split::train ? header_.train_tokens : split == Split::val ? header_.val_tokens : header_.test_tokens;
  }
  // A record file (version 2): its splits are records with a loss mask.
  bool has_records() const { return header_.version == kRecordFileVersion; }
  // A record file's split, copied out (checked when the file was opened).
  Records records(Split split) const;

  // Token `i` of a split; i < size(split) (checked only by assert).
  std::int32_t at(Split split, std::uint64_t i) const;
  // Tokens [start, start + out.size()) of a split into `out`. Throws orion::Error when the range
  // is past the split's end.
  void copy(Split split, std::uint64_t start, std::span<std::int32_t> out) const;
  // The whole split.
  std::vector<std::int32_t> tokens(Split split) const;

 private:
  TokenFile(std::shared_ptr<const MappedFile> file, TokenFileHeader header)
      : file_(std::move(file)), header_(header) {}
  std::uint64_t first_index(Split split) const {
    return split == Split::train ? 0 : split == Split::val ? header_.train_tokens : header_.train_tokens + header_.val_tokens;
  }
  std::uint64_t data_at() const { return has_records() ? kRecordFileHeaderBytes : kTokenFileHeaderBytes; }
  std::shared_ptr<const MappedFile> file_;
  TokenFileHeader header_;
};

}  // namespace orion::train
