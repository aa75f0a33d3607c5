#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing_temp_dir.h"

namespace orion {
namespace {

using testing_util::read_bytes;
using testing_util::TempDir;
using testing_util::write_bytes;

std::span<const std::byte> as_bytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

TEST(AtomicFile, WritesANewFileWithMode0644) {
  TempDir dir;
  const std::string path = dir.file("out.txt");
  write_file_atomic(path, std::string_view("first version\n"));
  EXPECT_EQ(read_bytes(path), "first version\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"out.txt"}));
}

TEST(AtomicFile, CommitReplacesTheContent) {
  TempDir dir;
  const std::string path = dir.file("model.bin");
  write_bytes(path, std::string(100000, 'o'));
  std::string content;
  for (int i = 0; i < 300000; ++i) content += static_cast<char>(i * 7);
  write_file_atomic(path, as_bytes(content));
  EXPECT_EQ(read_bytes(path), content);
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"model.bin"}));
}

TEST(AtomicFile, WriterAppendsPiecesAndWritesOnlyOnCommit) {
  TempDir dir;
  const std::string path = dir.file("log");
  write_bytes(path, "old");
  AtomicFileWriter w(path);
  EXPECT_EQ(w.path(), path);
  w.write(std::string_view("new "));
  w.write(as_bytes("content"));
  w.write(std::string_view(""));
  EXPECT_EQ(read_bytes(path), "old");
  // The temporary file sits beside the target until commit.
  const std::string temp_name = std::filesystem::path(w.temp_path()).filename().string();
  EXPECT_EQ(temp_name.rfind(".log.tmp.", 0), 0u) << temp_name;
  EXPECT_EQ(std::filesystem::path(w.temp_path()).parent_path(), std::filesystem::path(dir.path()));
  EXPECT_EQ(dir.list().size(), 2u);
  w.commit();
  EXPECT_EQ(read_bytes(path), "new content");
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"log"}));
  EXPECT_THROW(w.commit(), Error);
  EXPECT_THROW(w.write(std::string_view("more")), Error);
}

TEST(AtomicFile, UncommittedWriterLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("keep.txt");
  write_bytes(path, "precious");
  {
    AtomicFileWriter w(path);
    w.write(std::string_view("half-written garbage"));
    ASSERT_TRUE(std::filesystem::exists(w.temp_path()));
  }
  EXPECT_EQ(read_bytes(path), "precious");
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"keep.txt"}));
}

TEST(AtomicFile, WorksWithARelativePath) {
  TempDir dir;
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  write_file_atomic("plain-name", std::string_view("here"));
  std::filesystem::current_path(previous);
  EXPECT_EQ(read_bytes(dir.file("plain-name")), "here");
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"plain-name"}));
}

TEST(AtomicFile, MissingFolderErrorNamesThePath) {
  TempDir dir;
  const std::string path = dir.file("no-such-folder/out.txt");
  try {
    write_file_atomic(path, std::string_view("x"));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  }
  EXPECT_EQ(dir.list(), (std::vector<std::string>{}));
}

TEST(AtomicFile, FailedCommitLeavesTheTargetAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("taken");
  std::filesystem::create_directory(path);  // rename cannot replace a folder with a file
  {
    AtomicFileWriter w(path);
    w.write(std::string_view("data"));
    EXPECT_THROW(w.commit(), Error);
  }
  EXPECT_TRUE(std::filesystem::is_directory(path));
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"taken"}));
}

}  // namespace
}  // namespace orion
