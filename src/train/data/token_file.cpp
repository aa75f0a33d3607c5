#include "train/data/token_file.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstring>
#include <limits>

#include "core/atomic_file.h"
#include "core/content_hash.h"
#include "core/error.h"

namespace orion::train {

static_assert(std::endian::native == std::endian::little,
              "token files store little-endian integers and are mapped as they are");

namespace {

constexpr char kMagic[8] = {'O', 'R', 'I', 'O', 'N', 'T', 'O', 'K'};
constexpr std::uint64_t kNoEot = std::numeric_limits<std::uint64_t>::max();
// Offsets of the header's fields (token_file.h).
constexpr std::uint64_t kVersionAt = 8, kWidthAt = 12, kVocabAt = 16, kTrainAt = 24, kValAt = 32, kEotAt = 40,
                        kHashAt = 48;
constexpr std::size_t kHashBytes = 16;

template <typename T>
void put(std::array<std::byte, kTokenFileHeaderBytes>& h, std::uint64_t at, T v) {
  std::memcpy(h.data() + at, &v, sizeof v);
}
template <typename T>
T get(std::span<const std::byte> b, std::uint64_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

// The 16 bytes of a hash in its canonical order (the hex digits' order, as xxh128sum prints it).
std::array<std::byte, kHashBytes> hash_bytes(const ContentHasher& h) {
  const std::string hex = h.hex();
  std::array<std::byte, kHashBytes> out{};
  auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i < kHashBytes; ++i)
    out[i] = static_cast<std::byte>(digit(hex[2 * i]) * 16 + digit(hex[2 * i + 1]));
  return out;
}

// Calls fn(bytes) on the tokens encoded at `width`, a bounded chunk at a time.
template <typename Fn>
void for_each_encoded_chunk(std::span<const std::int32_t> tokens, std::uint32_t width, Fn&& fn) {
  constexpr std::size_t kChunk = 1 << 16;
  std::vector<std::byte> buf(kChunk * width);
  for (std::size_t start = 0; start < tokens.size(); start += kChunk) {
    const std::size_t n = std::min(kChunk, tokens.size() - start);
    for (std::size_t i = 0; i < n; ++i) {
      if (width == 2) {
        const auto v = static_cast<std::uint16_t>(tokens[start + i]);
        std::memcpy(buf.data() + 2 * i, &v, 2);
      } else {
        const auto v = static_cast<std::uint32_t>(tokens[start + i]);
        std::memcpy(buf.data() + 4 * i, &v, 4);
      }
    }
    fn(std::span<const std::byte>(buf.data(), n * width));
  }
}

void check_tokens(const std::string& path, std::span<const std::int32_t> tokens, std::uint64_t vocab_size,
                  Split split) {
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || static_cast<std::uint64_t>(tokens[i]) >= vocab_size)
      throw Error::in_file(path, std::string("cannot write ") + split_name(split) + " token " + std::to_string(i) +
                                     ": id " + std::to_string(tokens[i]) + " is not below the vocabulary size " +
                                     std::to_string(vocab_size));
}

std::string describe_split(Split split) { return split == Split::train ? "training" : "validation"; }

}  // namespace

const char* split_name(Split split) { return split == Split::train ? "train" : "val"; }

std::uint32_t token_width_for(std::uint64_t vocab_size) { return vocab_size <= (1u << 16) ? 2 : 4; }

void write_token_file(const std::string& path, std::uint64_t vocab_size, std::optional<std::uint64_t> eot_id,
                      std::span<const std::int32_t> train, std::span<const std::int32_t> val) {
  if (vocab_size == 0 || vocab_size > (std::uint64_t{1} << 31))
    throw Error::in_file(path, "cannot write a token file for a vocabulary of " + std::to_string(vocab_size) +
                                   " tokens (1 to 2^31 allowed)");
  if (eot_id && *eot_id >= vocab_size)
    throw Error::in_file(path, "cannot write a token file whose end-of-text id " + std::to_string(*eot_id) +
                                   " is not below the vocabulary size " + std::to_string(vocab_size));
  check_tokens(path, train, vocab_size, Split::train);
  check_tokens(path, val, vocab_size, Split::val);
  const std::uint32_t width = token_width_for(vocab_size);

  ContentHasher hasher;
  for (auto part : {train, val}) for_each_encoded_chunk(part, width, [&](auto bytes) { hasher.update_unframed(bytes); });

  std::array<std::byte, kTokenFileHeaderBytes> h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  put(h, kVersionAt, kTokenFileVersion);
  put(h, kWidthAt, width);
  put(h, kVocabAt, vocab_size);
  put(h, kTrainAt, static_cast<std::uint64_t>(train.size()));
  put(h, kValAt, static_cast<std::uint64_t>(val.size()));
  put(h, kEotAt, eot_id.value_or(kNoEot));
  const auto hash = hash_bytes(hasher);
  std::memcpy(h.data() + kHashAt, hash.data(), kHashBytes);

  AtomicFileWriter out(path);
  out.write(std::span<const std::byte>(h));
  for (auto part : {train, val}) for_each_encoded_chunk(part, width, [&](auto bytes) { out.write(bytes); });
  out.commit();
}

TokenFile TokenFile::open(const std::string& path) {
  auto file = MappedFile::open(path);
  const std::span<const std::byte> b = file->bytes();
  const std::uint64_t size = b.size();
  if (size < kTokenFileHeaderBytes)
    throw Error::at_offset(path, size, "the file ends inside the token file header (" + std::to_string(size) +
                                           " bytes; the header has " + std::to_string(kTokenFileHeaderBytes) + ")");
  if (std::memcmp(b.data(), kMagic, sizeof kMagic) != 0)
    throw Error::at_offset(path, 0, "not a token file (the magic is not \"ORIONTOK\")");
  TokenFileHeader h;
  h.version = get<std::uint32_t>(b, kVersionAt);
  if (h.version != kTokenFileVersion)
    throw Error::at_offset(path, kVersionAt, "token file version " + std::to_string(h.version) +
                                                 " is not supported (this build reads version " +
                                                 std::to_string(kTokenFileVersion) + ")");
  h.width = get<std::uint32_t>(b, kWidthAt);
  if (h.width != 2 && h.width != 4)
    throw Error::at_offset(path, kWidthAt, "token width " + std::to_string(h.width) + " is neither 2 nor 4 bytes");
  h.vocab_size = get<std::uint64_t>(b, kVocabAt);
  if (h.vocab_size == 0 || h.vocab_size > (std::uint64_t{1} << 31))
    throw Error::at_offset(path, kVocabAt, "vocabulary size " + std::to_string(h.vocab_size) +
                                               " is out of range (1 to 2^31)");
  if (h.width != token_width_for(h.vocab_size))
    throw Error::at_offset(path, kWidthAt, "token width " + std::to_string(h.width) + " does not match the vocabulary of " +
                                               std::to_string(h.vocab_size) + " tokens (" +
                                               std::to_string(token_width_for(h.vocab_size)) + " expected)");
  // Counts are checked by division so that a huge count cannot overflow the byte arithmetic.
  const std::uint64_t capacity = (size - kTokenFileHeaderBytes) / h.width;
  h.train_tokens = get<std::uint64_t>(b, kTrainAt);
  if (h.train_tokens > capacity)
    throw Error::at_offset(path, kTrainAt, std::to_string(h.train_tokens) + " training tokens of " +
                                               std::to_string(h.width) + " bytes do not fit in the file's " +
                                               std::to_string(size) + " bytes (room for " + std::to_string(capacity) + ")");
  h.val_tokens = get<std::uint64_t>(b, kValAt);
  if (h.val_tokens > capacity - h.train_tokens)
    throw Error::at_offset(path, kValAt, std::to_string(h.val_tokens) + " validation tokens after " +
                                             std::to_string(h.train_tokens) + " training tokens do not fit in the file's " +
                                             std::to_string(size) + " bytes (room for " +
                                             std::to_string(capacity - h.train_tokens) + ")");
  const std::uint64_t end = kTokenFileHeaderBytes + (h.train_tokens + h.val_tokens) * h.width;
  if (end != size)
    throw Error::at_offset(path, end, std::to_string(size - end) + " bytes follow the last token (the counts at bytes " +
                                          std::to_string(kTrainAt) + " and " + std::to_string(kValAt) +
                                          " say the tokens end here)");
  const std::uint64_t eot = get<std::uint64_t>(b, kEotAt);
  if (eot != kNoEot) {
    if (eot >= h.vocab_size)
      throw Error::at_offset(path, kEotAt, "end-of-text id " + std::to_string(eot) +
                                               " is not below the vocabulary size " + std::to_string(h.vocab_size));
    h.eot_id = eot;
  }
  // Every token, so that the loader never hands the model an id past its embedding table.
  const std::uint64_t count = h.train_tokens + h.val_tokens;
  const std::byte* data = b.data() + kTokenFileHeaderBytes;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t t = h.width == 2 ? get<std::uint16_t>(b, kTokenFileHeaderBytes + 2 * i)
                                         : get<std::uint32_t>(b, kTokenFileHeaderBytes + 4 * i);
    if (t >= h.vocab_size) {
      const bool train = i < h.train_tokens;
      throw Error::at_offset(path, kTokenFileHeaderBytes + i * h.width,
                             "token " + std::to_string(t) + " (" + describe_split(train ? Split::train : Split::val) +
                                 " token " + std::to_string(train ? i : i - h.train_tokens) +
                                 ") is not below the vocabulary size " + std::to_string(h.vocab_size));
    }
  }
  ContentHasher hasher;
  hasher.update_unframed(std::span<const std::byte>(data, count * h.width));
  if (hash_bytes(hasher) != get<std::array<std::byte, kHashBytes>>(b, kHashAt))
    throw Error::at_offset(path, kHashAt, "the checksum does not match the tokens (the file is corrupt)");
  return TokenFile(std::move(file), h);
}

std::int32_t TokenFile::at(Split split, std::uint64_t i) const {
  assert(i < size(split));
  const std::uint64_t at = kTokenFileHeaderBytes + (first_index(split) + i) * header_.width;
  const std::span<const std::byte> b = file_->bytes();
  return header_.width == 2 ? static_cast<std::int32_t>(get<std::uint16_t>(b, at))
                            : static_cast<std::int32_t>(get<std::uint32_t>(b, at));
}

void TokenFile::copy(Split split, std::uint64_t start, std::span<std::int32_t> out) const {
  if (start > size(split) || out.size() > size(split) - start)
    throw Error::in_file(path(), std::string("tokens ") + std::to_string(start) + " to " +
                                     std::to_string(start + out.size()) + " are past the end of the " + split_name(split) +
                                     " split (" + std::to_string(size(split)) + " tokens)");
  const std::byte* p = file_->bytes().data() + kTokenFileHeaderBytes + (first_index(split) + start) * header_.width;
  if (header_.width == 2) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      out[i] = v;
    }
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      out[i] = static_cast<std::int32_t>(v);
    }
  }
}

std::vector<std::int32_t> TokenFile::tokens(Split split) const {
  std::vector<std::int32_t> out(size(split));
  copy(split, 0, out);
  return out;
}

}  // namespace orion::train
