#pragma once
// Writing a file so that readers (and a crash) see either the old content or the new, never
// a mixture: write a temporary file in the same folder, then rename it over the target.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace orion {

class AtomicFileWriter {
 public:
  // Creates ".NAME.tmp.XXXXXX" beside `path`. Throws orion::Error naming the path and the OS
  // reason (e.g. when the folder does not exist).
  explicit AtomicFileWriter(std::string path);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  // Removes the temporary file unless commit() succeeded: the target is left untouched.
  ~AtomicFileWriter();

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  // Flushes the data to disk, renames the temporary file over the target and flushes the
  // folder, so the new content survives a crash once this returns. At most once.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  void discard() noexcept;
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes);
void write_file_atomic(const std::string& path, std::string_view text);

}  // namespace orion
