#pragma once
// NumPy's .npy files (format versions 1.0 to 3.0): the one array format every tool of the field
// reads and writes, so that `orion mil run` takes inputs from and gives outputs to numpy and
// torch without a converter. Little-endian, C order; the dtypes Orion has (f32 f16 bf16 is not
// one of numpy's, so not here; i32 i8 u8 bool).
#include <string>

#include "core/tensor.h"

namespace orion {

// Reads a whole .npy file. Throws orion::Error naming the file and the byte offset for a bad
// magic, an unsupported version, a header that is not the dict numpy writes, a big-endian or
// Fortran-order array, a dtype Orion has no type for, or data shorter or longer than the shape.
Tensor read_npy(const std::string& path);

// The same, from bytes already in memory (`name` stands for the file in messages).
Tensor parse_npy(std::span<const std::byte> bytes, const std::string& name);

// Writes `t` (any layout; written contiguous) as a version 1.0 file, atomically. Throws for
// bf16, which numpy has no dtype for.
void write_npy(const std::string& path, const Tensor& t);

// The file's bytes, as write_npy writes them.
std::vector<std::byte> npy_bytes(const Tensor& t);

}  // namespace orion
