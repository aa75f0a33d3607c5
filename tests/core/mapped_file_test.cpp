#include "core/mapped_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing_temp_dir.h"

namespace orion {
namespace {

using testing_util::TempDir;
using testing_util::write_bytes;

std::string as_string(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// What Error's message for `path` must contain: the path and the OS reason.
void expect_open_error(const std::string& path, const std::string& reason) {
  try {
    MappedFile::open(path);
    FAIL() << "no error for " << path;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
  }
}

TEST(MappedFile, ReadsAWrittenFile) {
  TempDir dir;
  std::string content = "hello, mapped world";
  content += std::string(10000, 'x') + '\0' + "end";
  const std::string path = dir.file("data.bin");
  write_bytes(path, content);
  auto f = MappedFile::open(path);
  EXPECT_EQ(f->size(), content.size());
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(as_string(f->bytes()), content);
}

TEST(MappedFile, EmptyFileIsValid) {
  TempDir dir;
  const std::string path = dir.file("empty");
  write_bytes(path, "");
  auto f = MappedFile::open(path);
  EXPECT_EQ(f->size(), 0u);
  EXPECT_TRUE(f->bytes().empty());
  EXPECT_EQ(tensor_view(f, DType::f32, {0}, 0).numel(), 0);
  EXPECT_THROW(tensor_view(f, DType::f32, {1}, 0), Error);
}

TEST(MappedFile, MissingFileErrorNamesThePathAndReason) {
  TempDir dir;
  expect_open_error(dir.file("no-such-file.bin"), "No such file or directory");
}

TEST(MappedFile, FolderIsRejected) {
  TempDir dir;
  expect_open_error(dir.path(), "not a regular file");
}

TEST(MappedFile, TensorViewSharesTheMappingAndKeepsItAlive) {
  TempDir dir;
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 1e-3f, 7.0f, 8.0f};
  std::string content = "HEADER!!";  // 8 bytes, so the floats are aligned
  content.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  const std::string path = dir.file("weights.bin");
  write_bytes(path, content);

  auto f = MappedFile::open(path);
  std::weak_ptr<const MappedFile> watch = f;
  Tensor t = tensor_view(f, DType::f32, {2, 3}, 8);
  EXPECT_EQ(t.raw(), reinterpret_cast<const std::byte*>(f->bytes().data()) + 8);
  f.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(t.to_floats(), values);
  Tensor tail = tensor_view(watch.lock(), DType::f32, {2}, 8 + 16);
  EXPECT_EQ(tail.to_floats(), (std::vector<float>{7.0f, 8.0f}));
  t = Tensor();
  tail = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(MappedFile, TensorViewAtAMisalignedOffsetIsAnAlignedCopy) {
  TempDir dir;
  const std::vector<float> values = {1.0f, 2.0f, 3.0f};
  std::string content = "abc";
  content.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  const std::string path = dir.file("odd.bin");
  write_bytes(path, content);
  auto f = MappedFile::open(path);
  Tensor t = tensor_view(f, DType::f32, {3}, 3);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.raw()) % alignof(float), 0u);
  EXPECT_EQ(t.to_floats(), values);
}

TEST(MappedFile, TensorViewOutOfRangeNamesFileAndOffset) {
  TempDir dir;
  const std::string path = dir.file("short.bin");
  write_bytes(path, std::string(32, '\0'));
  auto f = MappedFile::open(path);
  EXPECT_NO_THROW(tensor_view(f, DType::f16, {4, 4}, 0));
  for (std::size_t offset : {std::size_t{2}, std::size_t{40}}) {
    try {
      tensor_view(f, DType::f16, {4, 4}, offset);
      FAIL() << "no error at offset " << offset;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_NE(message.find("at byte " + std::to_string(offset)), std::string::npos) << message;
    }
  }
  EXPECT_THROW(tensor_view(f, DType::f32, {std::int64_t{1} << 62, 8}, 0), Error);
  EXPECT_THROW(tensor_view(nullptr, DType::f32, {1}, 0), Error);
}

}  // namespace
}  // namespace orion
