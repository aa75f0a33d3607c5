#pragma once
// MLX's quantized folders, as mlx-lm writes them (mlx_lm/utils.py quantize_model and load):
// config.json's "quantization" (mirrored as "quantization_config") holds the defaults,
// {"group_size": 64, "bits": 4, "mode": "affine"}, and, for modules quantized otherwise, an entry
// under the module's path: {"group_size": 32, "bits": 8} or false (left in floats). A quantized
// module M (a linear layer or the embedding) is three tensors: "M.weight", uint32 words
// [out, in * bits / 32] packed as exec/cpu/quantize_affine.h says, and "M.scales", "M.biases" in
// the model's float type [out, in / group]. As mlx-lm does, a module is quantized when the
// file holds "M.scales". Only the affine mode is read; mxfp4, nvfp4 and the quant_method
// formats of other tools (awq, gptq, bitnet) are refused by name.
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/tensor.h"
#include "exec/cpu/quantize_affine.h"

namespace orion::model {

class Checkpoint;

struct MlxQuantization {
  exec::cpu::AffineFormat defaults;
  // Per-module entries: the module's own format, or nullopt when it is kept in floats.
  std::map<std::string, std::optional<exec::cpu::AffineFormat>, std::less<>> modules;

  // The format of module `path` ("model.layers.0.mlp.down_proj"); nullopt when kept in floats.
  std::optional<exec::cpu::AffineFormat> format_of(std::string_view path) const;
  bool operator==(const MlxQuantization&) const = default;
};

// config.json's quantization, or nullopt for a float checkpoint. Throws orion::Error naming
// `source` and the key for a format Orion does not read (another mode or quant_method, bits or
// group_size outside MLX's lists, a malformed entry).
std::optional<MlxQuantization> read_mlx_quantization(const nlohmann::json& config, const std::string& source);
// The "quantization" object that declares `q` (convert writes it under both keys, as mlx-lm).
nlohmann::json mlx_quantization_json(const MlxQuantization& q);

// One quantized matrix as stored, the scales and biases widened to f32.
struct QuantizedMatrix {
  Tensor words;   // u32 [rows, affine_row_words(cols, bits)]
  Tensor scales;  // f32 [rows, cols / group]
  Tensor biases;  // f32 [rows, cols / group]
  exec::cpu::AffineFormat format;
  std::int64_t rows() const { return scales.dim(0); }
  std::int64_t cols() const { return scales.dim(1) * format.group; }
};
using QuantizedMatrices = std::map<std::string, QuantizedMatrix, std::less<>>;

// "model.layers.0.mlp.down_proj.weight" -> "model.layers.0.mlp.down_proj": the module path
// config.json and the ".scales" tensors are keyed by; "" for a name that is not "*.weight".
std::string quantized_module_of(std::string_view weight_name);

// The three tensors of module `module` from `checkpoint`, checked against the matrix the model
// needs, `shape` ([out, in]) in format `f`: the words' dtype and shape, the scales' and biases'
// float dtype and shape, and `in` a whole number of groups. Throws orion::Error naming the file
// and the tensor.
QuantizedMatrix read_quantized_matrix(const Checkpoint& checkpoint, const std::string& module, const Shape& shape,
                                      exec::cpu::AffineFormat f);
// The matrix as f32 [rows, cols].
Tensor dequantize(const QuantizedMatrix& m);
// `w` (f32 [rows, cols]) quantized in format `f`; throws orion::Error when cols is not a whole
// number of groups.
QuantizedMatrix quantize(const Tensor& w, exec::cpu::AffineFormat f);

}  // namespace orion::model
