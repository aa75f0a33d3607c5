// Fuzz target: token files (train/data/token_file.h), version 1 streams and version 2 record
// files, mapped like the real ones. The header carries an XXH3-128 of the bytes after it, which
// a mutation almost never keeps right, so each input is read twice: as it is (the header checks,
// the checksum check) and with the checksum field rewritten to match its bytes (the token, mask
// and record checks behind the checksum, and the loaders on an accepted file).
#include <cstring>
#include <vector>

#include "core/content_hash.h"
#include "fuzz_input.h"
#include "train/data/data_loader.h"
#include "train/data/record_loader.h"
#include "train/data/token_file.h"

namespace {

void read(const std::uint8_t* data, std::size_t size) {
  const orion::fuzz::MemFile file(data, size);
  orion::fuzz::expect_ok_or_error([&] {
    const auto f = orion::train::TokenFile::open(file.path());
    for (const auto split : {orion::train::Split::train, orion::train::Split::val, orion::train::Split::test}) {
      const std::vector<std::int32_t> tokens = f.tokens(split);
      if (tokens.size() != f.size(split)) std::abort();
      for (const std::int32_t t : tokens)
        if (t < 0 || static_cast<std::uint64_t>(t) >= f.vocab_size()) std::abort();
      if (f.has_records()) {
        // The records and a bucketed loader over them.
        const orion::train::Records r = f.records(split);
        if (r.tokens.size() != f.size(split) || r.mask.size() != r.tokens.size()) std::abort();
        for (std::size_t i = 0; i < r.count(); ++i)
          if (r.length(i) == 0) std::abort();
        orion::fuzz::expect_ok_or_error([&] {
          orion::train::RecordLoader loader(r, {.batch = 2, .seq = 8, .buckets = {4, 8}, .skip_long = false, .seed = 7, .pad_id = 0},
                                            f.path());
          for (int i = 0; i < 3; ++i) (void)loader.next();
        });
        continue;
      }
      // A short loader run over the file, when its split holds a window of 4 + 1 tokens.
      orion::fuzz::expect_ok_or_error([&] {
        orion::train::DataLoader loader(f, split, 2, 4, 7);
        for (int i = 0; i < 3; ++i) (void)loader.next();
      });
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  read(data, size);
  constexpr std::size_t kHashAt = 48;
  if (size < orion::train::kTokenFileHeaderBytes) return 0;
  std::uint32_t version = 0;
  std::memcpy(&version, data + 8, 4);
  const std::size_t kHeader =
      version == orion::train::kRecordFileVersion ? orion::train::kRecordFileHeaderBytes : orion::train::kTokenFileHeaderBytes;
  if (size < kHeader) return 0;
  std::vector<std::uint8_t> fixed(data, data + size);
  orion::ContentHasher h;
  h.update_unframed(std::as_bytes(std::span(fixed).subspan(kHeader)));
  const std::string hex = h.hex();  // canonical order, as the header stores it
  for (std::size_t i = 0; i < 16; ++i) fixed[kHashAt + i] = static_cast<std::uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  read(fixed.data(), fixed.size());
  return 0;
}
