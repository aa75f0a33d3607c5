#include "device/ane_work_folder.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace orion::device {

namespace fs = std::filesystem;

namespace {

void make_parent(const fs::path& file) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) throw Error::in_file(file.parent_path().string(), "cannot create the folder: " + ec.message());
}

// `to` gets `from`'s bytes: a hard link where the file system allows one, a copy where not, made
// under a name of its own and renamed into place, so that no reader sees part of a file.
void place(const fs::path& from, const fs::path& to) {
  static std::atomic<unsigned> serial{0};
  make_parent(to);
  const fs::path tmp = to.parent_path() / ("." + to.filename().string() + ".orion-" + std::to_string(::getpid()) +
                                           "-" + std::to_string(serial++));
  std::error_code ec;
  fs::create_hard_link(from, tmp, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(from, tmp, ec);
    if (ec) {
      fs::remove(tmp, ec);
      throw Error::in_file(to.string(), "cannot copy " + from.string() + " to it: " + ec.message());
    }
  }
  fs::rename(tmp, to, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    throw Error::in_file(to.string(), "cannot rename " + tmp.string() + " to it: " + why);
  }
}

// Whether `file` holds exactly `bytes`; a file that is missing or unreadable does not.
bool holds(const fs::path& file, std::span<const std::byte> bytes) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec || size != bytes.size()) return false;
  try {
    const auto mapped = MappedFile::open(file.string());
    return bytes.empty() || std::memcmp(mapped->bytes().data(), bytes.data(), bytes.size()) == 0;
  } catch (const Error&) {
    return false;
  }
}

void write_atomic(const fs::path& file, std::span<const std::byte> bytes) {
  make_parent(file);
  write_file_atomic(file.string(), bytes);
}

}  // namespace

void AneWorkFolder::write(const AneProgramSource& source) const {
  write_atomic(fs::path(dir_) / "model.mil", std::as_bytes(std::span(source.mil_text)));
  for (const AneWeightFile& w : source.weights) write_atomic(fs::path(dir_) / w.relative, w.bytes);
}

void AneWorkFolder::keep() {
  std::error_code ec;
  fs::remove_all(kept_, ec);
  if (ec) throw Error::in_file(kept_, "cannot empty the folder: " + ec.message());
  kept_files_.clear();
  const fs::path root(dir_);
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    kept_files_.push_back(fs::relative(it->path(), root).generic_string());
  }
  if (ec) throw Error::in_file(dir_, "cannot list the work folder: " + ec.message());
  std::sort(kept_files_.begin(), kept_files_.end());
  for (const std::string& rel : kept_files_) place(root / rel, fs::path(kept_) / rel);
}

std::vector<std::string> AneWorkFolder::refresh(const std::string& kernel_folder,
                                                const std::vector<std::string>& weights) const {
  std::vector<std::string> written;
  const fs::path root(dir_);
  for (const std::string& rel : kept_files_) {
    std::error_code ec;
    if (fs::exists(root / rel, ec)) continue;
    place(fs::path(kept_) / rel, root / rel);
    written.push_back(rel);
  }
  for (const std::string& rel : weights) {
    const auto now = MappedFile::open((fs::path(kernel_folder) / rel).string());
    if (holds(root / rel, now->bytes())) continue;
    write_atomic(root / rel, now->bytes());
    if (std::find(written.begin(), written.end(), rel) == written.end()) written.push_back(rel);
  }
  return written;
}

}  // namespace orion::device
