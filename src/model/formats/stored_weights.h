#pragma once
// The weight format `orion convert` writes: a safetensors file whose matrices are already in
// the fast decoder's layout and dtype, so that loading is a mapping and no copy.
//
// A converted file declares itself in "__metadata__":
//   "orion.layout": "out_in"        every matrix stored as [out, in] rows (GPT-2's Conv1D
//                                   weights transposed; wte is [vocab, n_embd] either way)
//   "orion.dtype": "f32"|"f16"|"q8" how the matrices are stored
//   "orion.q8_block": "32"|"64"     q8 only: weights per scale, along `in`
// f32 and f16 matrices keep their Hugging Face names, as F32 or F16 tensors. A q8 matrix NAME
// is two tensors: "NAME.q8" (I8 [out, in]) and "NAME.q8_scale" (F32 or F16 [out, in / block]),
// in quantize_q8's format (exec/cpu/quantize.h). Everything else (biases, layer norms, wpe)
// stays F32 under its own name. A file without "orion." keys is a Hugging Face file ([in, out]
// Conv1D weights, any float dtype), read by Gpt2Model::load as before.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "exec/cpu/executor.h"
#include "model/formats/safetensors.h"
#include "model/weight_dtype.h"

namespace orion::model {

inline constexpr std::string_view kLayoutKey = "orion.layout";
inline constexpr std::string_view kLayoutOutIn = "out_in";
inline constexpr std::string_view kDTypeKey = "orion.dtype";
inline constexpr std::string_view kQ8BlockKey = "orion.q8_block";
inline constexpr std::string_view kQ8Suffix = ".q8";
inline constexpr std::string_view kQ8ScaleSuffix = ".q8_scale";

struct StoredFormat {
  WeightDType dtype = WeightDType::f32;
  int q8_block = 0;             // q8 only: 32 or 64
  DType q8_scale = DType::f32;  // q8 only: how the file stores the scales (f32 or f16)
  bool operator==(const StoredFormat&) const = default;
};

// "f32", "f16", "q8/32", "q8/64 (f16 scales)": for messages.
std::string stored_format_name(const StoredFormat& f);

// Whether the graph param `name` is a matrix the decoder streams (wte and the four of each
// block), and whether GPT-2 keeps it [in, out] (Conv1D) in the graphs and Hugging Face files.
bool gpt2_is_linear(std::string_view name);
bool gpt2_is_conv1d(std::string_view name);

// The format a file declares; nullopt when it has no "orion." metadata (Hugging Face layout).
// Throws orion::Error naming the file and the key for an unknown layout or dtype, a missing
// or unsupported block, or "orion." keys this reader does not know.
std::optional<StoredFormat> read_stored_format(const SafetensorsFile& file);
// The "__metadata__" entries that declare `f` (the scale dtype is in the tensors themselves).
std::map<std::string, std::string> stored_format_metadata(const StoredFormat& f);

// A matrix as stored: w [out, in] (f32, f16 or i8); for q8 the scales [out, in / block], as
// f32 (widened once at load when the file has f16 scales: the kernels read f32).
struct StoredMatrix {
  Tensor w;
  Tensor scales;
};

class StoredWeights {
 public:
  // Checks and maps every tensor of `params` (graph names and shapes, as the graphs hold them)
  // from a file in format `format`: each matrix's tensors with the right dtypes and shapes and
  // a block that divides `in`, every other param a float tensor of its shape, and no tensor
  // the model does not use. Zero-copy views of the mapping (which they keep alive), but for
  // f16 scales and non-f32 vectors. Throws orion::Error naming the file and the tensor.
  static StoredWeights open(const SafetensorsFile& file, const StoredFormat& format,
                            const std::vector<std::pair<std::string, Shape>>& params);

  const StoredFormat& format() const { return format_; }
  const std::string& path() const { return path_; }
  // A matrix of the model (gpt2_is_linear) / any other param, f32; throws for other names.
  const StoredMatrix& matrix(std::string_view name) const;
  const Tensor& vector(std::string_view name) const;
  // A matrix as f32 [out, in] rows: dequantised (q8) or widened (f16); a copy.
  Tensor rows_f32(std::string_view name) const;
  // Every param in f32 and the graphs' layout (Conv1D matrices transposed back): a copy.
  TensorMap graph_weights() const;
  // Bytes of all stored tensors (the matrices in their dtype, scales and vectors).
  std::size_t bytes() const;

 private:
  std::string path_;
  StoredFormat format_;
  std::map<std::string, StoredMatrix, std::less<>> matrices_;
  std::map<std::string, Tensor, std::less<>> vectors_;
};

}  // namespace orion::model
