#pragma once
// Helpers shared by the fuzz targets: the input as text, as a file the path-based readers can
// open (a memfd, so no disk traffic per run), and the one outcome a reader may have besides
// success, orion::Error. Any other exception escapes the target and libFuzzer reports it as
// a crash: a reader must not leak std::out_of_range, nlohmann's type errors or bad_alloc.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"

namespace orion::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input as an anonymous in-memory file; path() is "/proc/self/fd/N", which open() and
// mmap() accept like any file.
class MemFile {
 public:
  MemFile(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() { ::close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

// Runs `read` and swallows orion::Error, the documented way to refuse an input. Its message
// must name where the problem is, so an empty one is a finding too. With ORION_FUZZ_PRINT=1
// the message is printed: `NAME_fuzz FILE` then shows what a reader says about FILE
// (docs/ERRORS.md's tables were made so).
template <class F>
void expect_ok_or_error(F&& read) {
  try {
    read();
  } catch (const orion::Error& e) {
    if (std::string_view(e.what()).empty()) std::abort();
    static const bool print = std::getenv("ORION_FUZZ_PRINT") != nullptr;
    if (print) std::fprintf(stderr, "error: %s\n", e.what());
  }
}

}  // namespace orion::fuzz
