#pragma once
// Writing a whole folder so that readers (and a crash) see the old folder or the new one,
// never a mixture of their files: the files are written into a temporary folder beside the
// target, which then takes the target's place in one rename. Replacing an existing non-empty
// folder is one atomic swap on Linux (renameat2 RENAME_EXCHANGE); elsewhere the old folder is
// first renamed aside, so that for a moment the target does not exist, but it is still never
// a mixture.
#include <string>
#include <string_view>

namespace orion {

class AtomicFolderWriter {
 public:
  // Creates ".NAME.tmp.XXXXXX" beside `path` (whose parent must exist). Throws orion::Error
  // naming the path and the OS reason.
  explicit AtomicFolderWriter(std::string path);
  AtomicFolderWriter(const AtomicFolderWriter&) = delete;
  AtomicFolderWriter& operator=(const AtomicFolderWriter&) = delete;
  // Removes the temporary folder and everything in it unless commit() succeeded.
  ~AtomicFolderWriter();

  // Where to write the file `name` of the new folder (inside the temporary folder); write
  // each one with AtomicFileWriter or write_safetensors, which sync it.
  std::string file(std::string_view name) const;
  // Puts the new folder in place and syncs the parent folder. An existing target is replaced
  // (and its old content deleted) only when `replace`; otherwise it is an error. At most once.
  void commit(bool replace);

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  std::string path_;
  std::string temp_path_;
  bool committed_ = false;
};

}  // namespace orion
