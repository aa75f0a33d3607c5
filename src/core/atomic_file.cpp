#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "core/error.h"

namespace orion {

namespace {

// The folder part of `path` ("." when it has none), for the temporary file and the fsync.
std::string folder_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (path_.empty() || path_.back() == '/') throw Error::in_file(path_, "not a file name");
  const std::string folder = folder_of(path_);
  std::string temp = (folder == "/" ? "/" : folder + "/") + "." + name_of(path_) + ".tmp.XXXXXX";
  std::vector<char> name(temp.begin(), temp.end());
  name.push_back('\0');
  fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd_ < 0) throw Error::from_errno(path_, "cannot create a temporary file", errno);
  temp_path_.assign(name.data());
  // mkstemp creates the file 0600; the result should look like any file we write.
  if (::fchmod(fd_, 0644) != 0) {
    const int err = errno;
    discard();
    throw Error::from_errno(path_, "cannot set the mode of " + temp_path_, err);
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw Error::in_file(path_, "write after commit or failure");
  const std::byte* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error::from_errno(path_, "cannot write", errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw Error::in_file(path_, "commit after commit or failure");
  // Without the fsync a crash after the rename could leave the new name with empty content.
  if (::fsync(fd_) != 0) throw Error::from_errno(path_, "cannot sync", errno);
  const int fd = fd_;
  fd_ = -1;
  // Not retried on EINTR: Linux releases the descriptor even then. Still reported, since a
  // failed close can mean the data did not reach the file (NFS).
  if (::close(fd) != 0) throw Error::from_errno(path_, "cannot close", errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    throw Error::from_errno(path_, "cannot rename " + temp_path_ + " to it", errno);
  temp_path_.clear();
  committed_ = true;
  // The rename itself is only durable once the folder's entry is on disk. Some file systems
  // refuse to fsync a folder (EINVAL); the content is already in place, so that is no error.
  const std::string folder = folder_of(path_);
  const int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw Error::from_errno(folder, "cannot open the folder to sync it", errno);
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL && err != ENOTSUP)
    throw Error::from_errno(folder, "cannot sync the folder", err);
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes) {
  AtomicFileWriter w(path);
  w.write(bytes);
  w.commit();
}

void write_file_atomic(const std::string& path, std::string_view text) {
  AtomicFileWriter w(path);
  w.write(text);
  w.commit();
}

}  // namespace orion
