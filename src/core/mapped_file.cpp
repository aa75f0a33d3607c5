#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <limits>

#include "core/error.h"

namespace orion {

namespace {

// Closes the descriptor on every path out of open(); the mapping does not need it.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw Error::from_errno(path, "cannot open", errno);
  FdCloser closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error::from_errno(path, "cannot stat", errno);
  // mmap of a folder or a pipe fails with an unhelpful reason, or succeeds with size 0.
  if (!S_ISREG(st.st_mode)) throw Error::in_file(path, "not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > std::numeric_limits<std::size_t>::max())
    throw Error::in_file(path, "too large to map");
  const auto size = static_cast<std::size_t>(st.st_size);

  // mmap rejects a length of zero, and an empty file has nothing to map anyway.
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(path, nullptr, 0));

  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) throw Error::from_errno(path, "cannot map", errno);
  return std::shared_ptr<const MappedFile>(
      new MappedFile(path, static_cast<const std::byte*>(p), size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

Tensor tensor_view(std::shared_ptr<const MappedFile> file, DType dtype, Shape shape,
                   std::size_t offset) {
  if (!file) throw Error("tensor_view: no file");
  const std::string& path = file->path();
  const std::size_t size = file->size();
  if (offset > size)
    throw Error::at_offset(path, offset, "tensor starts past the end of the file (" +
                                             std::to_string(size) + " bytes)");
  // An empty file has no mapping; point at a byte of our own so that a zero-size view never
  // holds a null data pointer (memcpy of zero bytes from null is still undefined).
  alignas(kTensorAlignment) static const std::byte empty_file_byte{};
  const std::byte* base = size ? file->bytes().data() : &empty_file_byte;
  auto buffer = Buffer::borrow(const_cast<std::byte*>(base), size, file);
  Tensor view;
  try {
    view = Tensor::view_of(dtype, std::move(shape), std::move(buffer), offset);
  } catch (const Error& e) {
    throw Error::at_offset(path, offset,
                           std::string(e.what()) + " (the file has " + std::to_string(size) +
                               " bytes)");
  }
  // Typed access through a misaligned pointer is undefined behaviour, so a tensor that is not
  // aligned to its element size in the file is copied (the mapping is page-aligned, so only
  // the offset matters).
  if (offset % dtype_size(dtype) != 0) return view.clone();
  return view;
}

}  // namespace orion
