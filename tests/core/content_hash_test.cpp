// ContentHasher: equal content gives equal keys, any difference (a byte, the framing of the
// pieces) a different one; files hash like their bytes.
#include <gtest/gtest.h>

#include <fstream>

#include "core/content_hash.h"
#include "core/error.h"
#include "core/testing_temp_dir.h"

namespace orion {
namespace {

std::string hex_of(std::initializer_list<std::string_view> parts) {
  ContentHasher h;
  for (std::string_view p : parts) h.update(p);
  return h.hex();
}

TEST(ContentHash, EqualContentEqualKeysAndEveryDifferenceShows) {
  EXPECT_EQ(hex_of({"abc", "def"}), hex_of({"abc", "def"}));
  EXPECT_EQ(hex_of({"abc"}).size(), 32u);
  EXPECT_NE(hex_of({"abc", "def"}), hex_of({"abc", "deg"}));
  EXPECT_NE(hex_of({"abc", "def"}), hex_of({"abcd", "ef"}));  // framed by length
  EXPECT_NE(hex_of({}), hex_of({""}));
}

TEST(ContentHash, UnframedPiecesHashLikeTheirConcatenation) {
  auto unframed = [](std::initializer_list<std::string_view> parts) {
    ContentHasher h;
    for (std::string_view p : parts) h.update_unframed(std::as_bytes(std::span(p.data(), p.size())));
    return h.hex();
  };
  EXPECT_EQ(unframed({"abc", "def"}), unframed({"abcd", "ef"}));
  EXPECT_EQ(unframed({"abcdef"}), unframed({"", "abcdef", ""}));
  EXPECT_NE(unframed({"abcdef"}), unframed({"abcdeg"}));
  EXPECT_NE(unframed({"abcdef"}), hex_of({"abcdef"}));  // the framed stream differs
}

TEST(ContentHash, FilesHashLikeTheirBytes) {
  testing_util::TempDir dir;
  const std::string f = dir.path() + "/x.bin";
  std::ofstream(f, std::ios::binary) << "weights";
  ContentHasher a, b;
  a.update_file(f);
  b.update(std::string_view("weights"));
  EXPECT_EQ(a.hex(), b.hex());
  ContentHasher c;
  EXPECT_THROW(c.update_file(dir.path() + "/missing"), Error);
}

}  // namespace
}  // namespace orion
