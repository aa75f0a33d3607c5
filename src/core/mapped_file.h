#pragma once
// A whole file mapped read-only into memory, and zero-copy tensors over parts of it: how
// weights are used without reading them into separate buffers.
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "core/dtype.h"
#include "core/tensor.h"

namespace orion {

class MappedFile {
 public:
  // Throws orion::Error naming `path` and the OS reason. An empty file is valid (no mapping).
  static std::shared_ptr<const MappedFile> open(const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const std::byte* data, std::size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const std::byte* data_;
  std::size_t size_;
};

// A contiguous tensor of `dtype` and `shape` over the file's bytes from `offset`, sharing the
// mapping (which it keeps alive) instead of copying. Throws orion::Error naming the file and
// the offset when the range does not fit the file.
//
// The mapping is read-only (PROT_READ): the tensor must not be written to. Tensor has no
// const-storage variant, so the pointer is cast to non-const; writing through it would crash
// with SIGSEGV rather than change the file; call clone() for a writable copy. An offset that
// is not a multiple of the element size gives an aligned copy instead, since typed access
// through a misaligned pointer is undefined.
Tensor tensor_view(std::shared_ptr<const MappedFile> file, DType dtype, Shape shape,
                   std::size_t offset);

}  // namespace orion
