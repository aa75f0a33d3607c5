#include "core/atomic_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace orion {

namespace {

namespace fs = std::filesystem;

std::string make_temp_folder(const fs::path& target, const char* tag) {
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string pattern = (parent / ("." + target.filename().string() + tag + "XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (!::mkdtemp(name.data())) throw Error::from_errno(target.string(), "cannot create a temporary folder beside it", errno);
  return name.data();
}

void sync_folder(const std::string& folder) {
  const int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw Error::from_errno(folder, "cannot open the folder to sync it", errno);
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  // Some file systems refuse to fsync a folder; the rename is done, so that is no error.
  if (rc != 0 && err != EINVAL && err != ENOTSUP) throw Error::from_errno(folder, "cannot sync the folder", err);
}

// Swaps the two folders in one step where the OS can; false when it cannot.
bool exchange_folders(const std::string& a, const std::string& b) {
#if defined(__linux__) && defined(RENAME_EXCHANGE)
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS) throw Error::from_errno(b, "cannot swap " + a + " with it", errno);
#else
  (void)a;
  (void)b;
#endif
  return false;
}

}  // namespace

AtomicFolderWriter::AtomicFolderWriter(std::string path) : path_(std::move(path)) {
  while (path_.size() > 1 && path_.back() == '/') path_.pop_back();
  if (path_.empty()) throw Error::in_file(path_, "not a folder name");
  temp_path_ = make_temp_folder(path_, ".tmp.");
  // mkdtemp makes the folder 0700; the result should look like any folder we make.
  if (::chmod(temp_path_.c_str(), 0755) != 0) {
    const int err = errno;
    std::error_code ec;
    fs::remove_all(temp_path_, ec);
    throw Error::from_errno(path_, "cannot set the mode of " + temp_path_, err);
  }
}

AtomicFolderWriter::~AtomicFolderWriter() {
  if (committed_ || temp_path_.empty()) return;
  std::error_code ec;
  fs::remove_all(temp_path_, ec);
}

std::string AtomicFolderWriter::file(std::string_view name) const { return (fs::path(temp_path_) / name).string(); }

void AtomicFolderWriter::commit(bool replace) {
  if (committed_) throw Error::in_file(path_, "commit after commit");
  const fs::path target(path_);
  const std::string parent = target.has_parent_path() ? target.parent_path().string() : ".";
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(target, ec));
  if (exists && !replace) throw Error::in_file(path_, "exists already");
  if (exists && !fs::is_directory(fs::symlink_status(target, ec)))
    throw Error::in_file(path_, "exists and is not a folder");
  std::string old;  // where the replaced folder's content ends up, to be deleted
  if (!exists) {
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
      throw Error::from_errno(path_, "cannot rename " + temp_path_ + " to it", errno);
  } else if (exchange_folders(temp_path_, path_)) {
    old = temp_path_;
  } else {
    old = make_temp_folder(target, ".old.");
    if (::rename(path_.c_str(), old.c_str()) != 0)
      throw Error::from_errno(path_, "cannot move it aside to " + old, errno);
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      ::rename(old.c_str(), path_.c_str());  // put the old folder back
      throw Error::from_errno(path_, "cannot rename " + temp_path_ + " to it", err);
    }
  }
  committed_ = true;
  temp_path_.clear();
  sync_folder(parent);
  if (!old.empty()) fs::remove_all(old, ec);  // the new folder is in place: a leftover is harmless
}

}  // namespace orion
