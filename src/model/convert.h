#pragma once
// `orion convert`: a model folder rewritten with its matrices in the fast decoder's layout and
// a chosen dtype (stored_weights.h has the format), so that decoding maps the file and copies
// nothing. The source is a Hugging Face folder or a converted one.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/gpt2/gpt2_model.h"
#include "model/llama/llama_model.h"
#include "model/formats/stored_weights.h"

namespace orion::model {

struct ConvertOptions {
  WeightDType dtype = WeightDType::f16;
  int q8_block = kQ8Block;      // q8: 32 or 64 weights per scale
  int q4_group = kQ4Group;      // q4: 32, 64 or 128 weights per scale and bias
  DType q8_scale = DType::f32;  // q8: scales stored as f32 or f16
  bool force = false;           // replace an existing non-empty output folder
};

struct ConvertResult {
  std::optional<StoredFormat> from;  // nullopt: a Hugging Face folder
  StoredFormat to;
  std::string to_name;  // the format written, for messages
  std::vector<std::string> files;     // written, in the output folder
  std::vector<std::string> warnings;  // e.g. converting a q8 folder (precision is not recovered)
  std::uint64_t bytes_in = 0, bytes_out = 0;  // the two model.safetensors files
};

// The tensors of a converted model.safetensors for `model` in format `to` (write them with
// stored_format_metadata(to)). Matrices become [out, in] rows: f32 as they are, f16 rounded
// to nearest even, q8 by quantize_q8 with `to.q8_block` (then the scales rounded to f16 when
// `to.q8_scale` is f16). A model stored in exactly `to` is copied bit for bit. Throws
// orion::Error naming the tensor for a block that does not divide a matrix's rows.
std::vector<std::pair<std::string, Tensor>> convert_weights(const Gpt2Model& model, const StoredFormat& to);

// A Llama-family model's tensors in MLX's quantized layout (mlx_quantization.h), as mlx-lm's
// `convert -q` writes them: every matrix whose rows are a whole number of groups (the
// embedding included) quantized in format `f`, its scales and biases in `float_type`, the rest
// in `float_type` as they are. A model that arrives quantized is quantized again from its
// dequantized weights.
std::vector<std::pair<std::string, Tensor>> mlx_quantized_weights(const LlamaModel& model, exec::cpu::AffineFormat f,
                                                                  DType float_type);

// Converts the folder `src` into `out`: model.safetensors converted, config.json and the
// tokenizer files copied as they are (q4 of a Llama-family model: MLX's layout, config.json
// with its "quantization" added, readable by mlx-lm). All or nothing: the folder is written beside `out` and
// renamed into place (AtomicFolderWriter). Refuses an `out` that is `src`, an existing
// non-empty `out` without `force`, and, even with it, one holding any file this command
// does not write (so that --force cannot delete unrelated data).
ConvertResult convert_model(const std::string& src, const std::string& out, const ConvertOptions& options);

}  // namespace orion::model
