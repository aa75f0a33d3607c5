#include "runtime/weight_reload.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <span>

#include "core/error.h"
#include "core/mapped_file.h"

namespace orion::runtime {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMil = "model.mil";

// Regular files under `folder` by path relative to it, with their sizes.
std::map<std::string, std::uintmax_t> list_files(const std::string& folder) {
  if (!fs::is_directory(folder)) throw Error("weight reload: " + folder + " is not a folder");
  std::map<std::string, std::uintmax_t> out;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    if (e.is_regular_file()) out[fs::relative(e.path(), folder).generic_string()] = e.file_size();
  return out;
}

// Mapped rather than read: a step of training on the device rewrites every weight file of its
// kernels (a GPT-2 124M's are 250 MB of fp16), and reading them through a stream a byte at a
// time took longer than the whole rewrite from a mapping (docs/PERFORMANCE.md, "Smaller
// measurements behind the code").
std::shared_ptr<const MappedFile> map_file(const fs::path& path) { return MappedFile::open(path.string()); }

bool same_bytes(const fs::path& a, const fs::path& b) {
  const auto x = map_file(a), y = map_file(b);
  // std::equal, not std::ranges::equal: libc++ has the ranges algorithms from LLVM 15 on.
  const auto bx = x->bytes(), by = y->bytes();
  return std::equal(bx.begin(), bx.end(), by.begin(), by.end());
}

void overwrite(const fs::path& path, std::span<const std::byte> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);  // no O_TRUNC: the same file, in place
  if (fd < 0) throw Error::from_errno(path.string(), "cannot open for rewriting", errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw Error::from_errno(path.string(), "rewriting the weights in place failed", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error::from_errno(path.string(), "flushing the rewritten weights failed", err);
  }
  ::close(fd);
}

}  // namespace

std::string reload_mismatch(const std::string& kernel, const std::string& version) {
  const auto have = list_files(kernel), want = list_files(version);
  if (!have.contains(kMil)) return kernel + " has no " + kMil;
  for (const auto& [name, size] : want) {
    const auto it = have.find(name);
    if (it == have.end()) return version + " has " + name + ", which " + kernel + " lacks";
    if (it->second != size)
      return name + " is " + std::to_string(size) + " bytes in " + version + " and " + std::to_string(it->second) +
             " in " + kernel;
  }
  for (const auto& entry : have)
    if (!want.contains(entry.first)) return kernel + " has " + entry.first + ", which " + version + " lacks";
  if (!same_bytes(fs::path(kernel) / kMil, fs::path(version) / kMil))
    return std::string(kMil) + " differs (another program, or other weight offsets)";
  return "";
}

void rewrite_weights_in_place(const std::string& kernel, const std::string& version) {
  if (const std::string why = reload_mismatch(kernel, version); !why.empty())
    throw Error("weight reload: cannot rewrite the weights of " + kernel + " in place: " + why);
  for (const auto& [name, size] : list_files(version)) {
    if (name == kMil) continue;
    const fs::path target = fs::path(kernel) / name;
    const auto before = fs::last_write_time(target);
    overwrite(target, map_file(fs::path(version) / name)->bytes());
    // Readers that notice a rewrite by size and modification time (ane-sim does, a framework
    // cache may) miss a same-size rewrite inside the file system's timestamp granularity
    // (a jiffy on Linux): make the time move.
    if (fs::last_write_time(target) <= before)
      fs::last_write_time(target, before + std::chrono::milliseconds(1));
  }
}

}  // namespace orion::runtime
