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
constexpr std::uint64_t kTestAt = 64, kRecordsAt = 72, kReservedAt = 96;

using Header = std::array<std::byte, kRecordFileHeaderBytes>;

template <typename T>
void put(Header& h, std::uint64_t at, T v) {
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

std::string describe_split(Split split) {
  return split == Split::train ? "training" : split == Split::val ? "validation" : "test";
}

constexpr Split kSplits[3] = {Split::train, Split::val, Split::test};

void check_vocab(const std::string& path, std::uint64_t vocab_size, std::optional<std::uint64_t> eot_id) {
  if (vocab_size == 0 || vocab_size > (std::uint64_t{1} << 31))
    throw Error::in_file(path, "cannot write a token file for a vocabulary of " + std::to_string(vocab_size) +
                                   " tokens (1 to 2^31 allowed)");
  if (eot_id && *eot_id >= vocab_size)
    throw Error::in_file(path, "cannot write a token file whose end-of-text id " + std::to_string(*eot_id) +
                                   " is not below the vocabulary size " + std::to_string(vocab_size));
}

void check_records(const std::string& path, const Records& r, Split split) {
  bool ok = r.mask.size() == r.tokens.size() && (r.tokens.empty() ? r.starts.empty() : !r.starts.empty() && r.starts[0] == 0);
  for (std::size_t i = 1; ok && i < r.starts.size(); ++i) ok = r.starts[i] > r.starts[i - 1] && r.starts[i] < r.tokens.size();
  for (std::uint8_t m : r.mask) ok = ok && m <= 1;
  if (!ok) throw Error::in_file(path, std::string("cannot write the ") + split_name(split) + " records: their starts or mask are inconsistent");
}

// The fixed part of every header: magic, version, width, vocabulary, the first two counts, EOT.
Header common_header(std::uint32_t version, std::uint32_t width, std::uint64_t vocab_size, std::optional<std::uint64_t> eot_id,
                     std::uint64_t train, std::uint64_t val) {
  Header h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  put(h, kVersionAt, version);
  put(h, kWidthAt, width);
  put(h, kVocabAt, vocab_size);
  put(h, kTrainAt, train);
  put(h, kValAt, val);
  put(h, kEotAt, eot_id.value_or(kNoEot));
  return h;
}

}  // namespace

const char* split_name(Split split) { return split == Split::train ? "train" : split == Split::val ? "val" : "test"; }

std::uint32_t token_width_for(std::uint64_t vocab_size) { return vocab_size <= (1u << 16) ? 2 : 4; }

void write_token_file(const std::string& path, std::uint64_t vocab_size, std::optional<std::uint64_t> eot_id,
                      std::span<const std::int32_t> train, std::span<const std::int32_t> val) {
  check_vocab(path, vocab_size, eot_id);
  check_tokens(path, train, vocab_size, Split::train);
  check_tokens(path, val, vocab_size, Split::val);
  const std::uint32_t width = token_width_for(vocab_size);

  ContentHasher hasher;
  for (auto part : {train, val}) for_each_encoded_chunk(part, width, [&](auto bytes) { hasher.update_unframed(bytes); });
  Header h = common_header(kTokenFileVersion, width, vocab_size, eot_id, train.size(), val.size());
  const auto hash = hash_bytes(hasher);
  std::memcpy(h.data() + kHashAt, hash.data(), kHashBytes);

  AtomicFileWriter out(path);
  out.write(std::span<const std::byte>(h.data(), kTokenFileHeaderBytes));
  for (auto part : {train, val}) for_each_encoded_chunk(part, width, [&](auto bytes) { out.write(bytes); });
  out.commit();
}

void write_record_file(const std::string& path, std::uint64_t vocab_size, std::optional<std::uint64_t> eot_id,
                       const Records& train, const Records& val, const Records& test) {
  check_vocab(path, vocab_size, eot_id);
  const Records* parts[3] = {&train, &val, &test};
  for (int i = 0; i < 3; ++i) {
    check_tokens(path, parts[i]->tokens, vocab_size, kSplits[i]);
    check_records(path, *parts[i], kSplits[i]);
  }
  const std::uint32_t width = token_width_for(vocab_size);
  // Everything after the header in file order, so that one pass hashes and another writes.
  const auto each_body_chunk = [&](auto&& fn) {
    for (const Records* r : parts) for_each_encoded_chunk(r->tokens, width, fn);
    for (const Records* r : parts)
      if (!r->mask.empty()) fn(std::as_bytes(std::span<const std::uint8_t>(r->mask)));
    for (const Records* r : parts)
      if (!r->starts.empty()) fn(std::as_bytes(std::span<const std::uint64_t>(r->starts)));
  };
  ContentHasher hasher;
  each_body_chunk([&](std::span<const std::byte> bytes) { hasher.update_unframed(bytes); });
  Header h = common_header(kRecordFileVersion, width, vocab_size, eot_id, train.tokens.size(), val.tokens.size());
  put(h, kTestAt, static_cast<std::uint64_t>(test.tokens.size()));
  for (int i = 0; i < 3; ++i) put(h, kRecordsAt + 8 * i, static_cast<std::uint64_t>(parts[i]->count()));
  const auto hash = hash_bytes(hasher);
  std::memcpy(h.data() + kHashAt, hash.data(), kHashBytes);

  AtomicFileWriter out(path);
  out.write(std::span<const std::byte>(h));
  each_body_chunk([&](std::span<const std::byte> bytes) { out.write(bytes); });
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
  if (h.version != kTokenFileVersion && h.version != kRecordFileVersion)
    throw Error::at_offset(path, kVersionAt, "token file version " + std::to_string(h.version) +
                                                 " is not supported (this build reads versions 1 and 2)");
  const bool records = h.version == kRecordFileVersion;
  const std::uint64_t header_bytes = records ? kRecordFileHeaderBytes : kTokenFileHeaderBytes;
  if (size < header_bytes)
    throw Error::at_offset(path, size, "the file ends inside the record file header (" + std::to_string(size) +
                                           " bytes; the header has " + std::to_string(header_bytes) + ")");
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
  // Counts are checked by division so that a huge count cannot overflow the byte arithmetic:
  // each token takes `per_token` bytes (its id, and in a record file its mask byte).
  const std::uint64_t per_token = h.width + (records ? 1 : 0);
  std::uint64_t room = (size - header_bytes) / per_token;
  const auto count_at = [&](std::uint64_t at, const char* what) {
    const std::uint64_t n = get<std::uint64_t>(b, at);
    if (n > room)
      throw Error::at_offset(path, at, std::to_string(n) + " " + what + " tokens of " + std::to_string(per_token) +
                                           " bytes do not fit in the file's " + std::to_string(size) +
                                           " bytes (room for " + std::to_string(room) + ")");
    room -= n;
    return n;
  };
  h.train_tokens = count_at(kTrainAt, "training");
  h.val_tokens = count_at(kValAt, "validation");
  if (records) {
    h.test_tokens = count_at(kTestAt, "test");
    for (std::uint64_t at = kReservedAt; at < kRecordFileHeaderBytes; ++at)
      if (b[at] != std::byte{0}) throw Error::at_offset(path, at, "the header's reserved bytes are not zero");
  }
  const std::uint64_t count = h.train_tokens + h.val_tokens + h.test_tokens;
  std::uint64_t end = header_bytes + count * per_token;
  if (records) {
    std::uint64_t record_room = (size - end) / 8;
    for (int i = 0; i < 3; ++i) {
      h.records[i] = get<std::uint64_t>(b, kRecordsAt + 8 * i);
      if (h.records[i] > record_room)
        throw Error::at_offset(path, kRecordsAt + 8 * i, std::to_string(h.records[i]) + " " + describe_split(kSplits[i]) +
                                                            " records do not fit in the file after its tokens and mask");
      record_room -= h.records[i];
      end += 8 * h.records[i];
    }
  }
  if (end != size)
    throw Error::at_offset(path, end, std::to_string(size - end) + " bytes follow the last token (the header's counts end the file here)");
  const std::uint64_t eot = get<std::uint64_t>(b, kEotAt);
  if (eot != kNoEot) {
    if (eot >= h.vocab_size)
      throw Error::at_offset(path, kEotAt, "end-of-text id " + std::to_string(eot) +
                                               " is not below the vocabulary size " + std::to_string(h.vocab_size));
    h.eot_id = eot;
  }
  // Every token, so that the loader never hands the model an id past its embedding table.
  const std::byte* data = b.data() + header_bytes;
  const std::uint64_t split_tokens[3] = {h.train_tokens, h.val_tokens, h.test_tokens};
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t t = h.width == 2 ? get<std::uint16_t>(b, header_bytes + 2 * i)
                                         : get<std::uint32_t>(b, header_bytes + 4 * i);
    if (t >= h.vocab_size) {
      int s = 0;
      std::uint64_t k = i;
      while (k >= split_tokens[s]) k -= split_tokens[s++];
      throw Error::at_offset(path, header_bytes + i * h.width,
                             "token " + std::to_string(t) + " (" + describe_split(kSplits[s]) + " token " +
                                 std::to_string(k) + ") is not below the vocabulary size " + std::to_string(h.vocab_size));
    }
  }
  if (records) {
    const std::uint64_t mask_at = header_bytes + count * h.width;
    for (std::uint64_t i = 0; i < count; ++i)
      if (get<std::uint8_t>(b, mask_at + i) > 1)
        throw Error::at_offset(path, mask_at + i, "a mask byte is neither 0 nor 1");
    std::uint64_t at = mask_at + count;
    for (int s = 0; s < 3; ++s) {
      if ((split_tokens[s] == 0) != (h.records[s] == 0))
        throw Error::at_offset(path, kRecordsAt + 8 * s, "the " + describe_split(kSplits[s]) + " split has " +
                                                             std::to_string(split_tokens[s]) + " tokens in " +
                                                             std::to_string(h.records[s]) + " records");
      for (std::uint64_t r = 0; r < h.records[s]; ++r, at += 8) {
        const std::uint64_t start = get<std::uint64_t>(b, at);
        const bool ok = r == 0 ? start == 0 : start > get<std::uint64_t>(b, at - 8) && start < split_tokens[s];
        if (!ok)
          throw Error::at_offset(path, at, describe_split(kSplits[s]) + " record " + std::to_string(r) + " starts at token " +
                                               std::to_string(start) + ": starts must run from 0, increasing, inside the split");
      }
    }
  }
  ContentHasher hasher;
  hasher.update_unframed(std::span<const std::byte>(data, size - header_bytes));
  if (hash_bytes(hasher) != get<std::array<std::byte, kHashBytes>>(b, kHashAt))
    throw Error::at_offset(path, kHashAt, "the checksum does not match the tokens (the file is corrupt)");
  return TokenFile(std::move(file), h);
}

Records TokenFile::records(Split split) const {
  if (!has_records()) throw Error::in_file(path(), "holds a token stream, not records (a version 1 token file)");
  Records r;
  r.tokens = tokens(split);
  const std::uint64_t count = header_.train_tokens + header_.val_tokens + header_.test_tokens;
  const std::byte* mask = file_->bytes().data() + kRecordFileHeaderBytes + count * header_.width + first_index(split);
  const auto* m = reinterpret_cast<const std::uint8_t*>(mask);
  r.mask.assign(m, m + r.tokens.size());
  std::uint64_t first_record = 0;
  const int s = static_cast<int>(split);
  for (int i = 0; i < s; ++i) first_record += header_.records[i];
  r.starts.resize(header_.records[s]);
  if (!r.starts.empty())  // memcpy's pointers must not be null even for 0 bytes
    std::memcpy(r.starts.data(), file_->bytes().data() + kRecordFileHeaderBytes + count * (header_.width + 1) + 8 * first_record,
                8 * r.starts.size());
  return r;
}

std::int32_t TokenFile::at(Split split, std::uint64_t i) const {
  assert(i < size(split));
  const std::uint64_t at = data_at() + (first_index(split) + i) * header_.width;
  const std::span<const std::byte> b = file_->bytes();
  return header_.width == 2 ? static_cast<std::int32_t>(get<std::uint16_t>(b, at))
                            : static_cast<std::int32_t>(get<std::uint32_t>(b, at));
}

void TokenFile::copy(Split split, std::uint64_t start, std::span<std::int32_t> out) const {
  if (start > size(split) || out.size() > size(split) - start)
    throw Error::in_file(path(), std::string("tokens ") + std::to_string(start) + " to " +
                                     std::to_string(start + out.size()) + " are past the end of the " + split_name(split) +
                                     " split (" + std::to_string(size(split)) + " tokens)");
  const std::byte* p = file_->bytes().data() + data_at() + (first_index(split) + start) * header_.width;
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
