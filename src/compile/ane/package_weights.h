#pragma once
// A package's weight files (host_weights.bin, fp32; device_weights.bin, fp16): the params
// converted a piece at a time straight into the file (WeightBlobStream), so that a model of
// billions of parameters is never held a second time in memory on its way to disk.
#include <cstdint>
#include <string>
#include <vector>

#include "compile/ane/ane_package.h"
#include "core/tensor_map.h"

namespace orion::compile {

// Writes the params `names` of `weights` to `path` as blobs of `dtype` (f32 or f16), in that
// order; returns their manifest entries and adds the bytes written to `bytes`. Throws
// orion::Error naming a param with no value in `weights`, saying who reads it (`reader`).
std::vector<HostWeight> write_weight_file(const std::string& path, const std::vector<std::string>& names,
                                          const TensorMap& weights, DType dtype, const std::string& reader,
                                          std::int64_t& bytes);

}  // namespace orion::compile
