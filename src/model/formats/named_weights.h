#pragma once
// A model's parameters matched with the tensors of a file or of memory, by the graphs' names:
// every architecture's model folder (Gpt2Model, LlamaModel) checks and reads its weights here.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/cpu/executor.h"
#include "ir/graph.h"
#include "model/formats/checkpoint.h"
#include "model/formats/mlx_quantization.h"

namespace orion::model {

using ParamShapes = std::vector<std::pair<std::string, Shape>>;
// Which of a model's params to read (by param name); empty: every one. A pipeline stage
// (engine/pipeline.h) reads only its layers', so that no rank holds the whole model.
using ParamFilter = std::function<bool(std::string_view)>;
// The params `keep` selects (all of them when it is empty).
ParamShapes kept_params(ParamShapes params, const ParamFilter& keep);

// The params of `graph`, names and shapes, in node order.
ParamShapes graph_param_shapes(const ir::Graph& graph);

// Throws orion::Error naming `source` and the tensor when one of `params` is missing from
// `weights` or has another shape.
void check_named_weights(const TensorMap& weights, const ParamShapes& params, const std::string& source);

// How a checkpoint names the params: with `stored` in place of a param name's leading `param`
// (GPT-2's files: "transformer." before every name; a multimodal folder's text model:
// "model.language_model." for "model."). A name without `param` at its start is stored as it is.
struct NamePrefix {
  std::string param, stored;
  NamePrefix(std::string stored_before_every_name = "") : stored(std::move(stored_before_every_name)) {}  // NOLINT: a prefix converts
  NamePrefix(std::string param_prefix, std::string stored_prefix) : param(std::move(param_prefix)), stored(std::move(stored_prefix)) {}
  std::string stored_name(std::string_view name) const;
  // The param name of a stored one (the name itself when it has not the stored prefix).
  std::string_view param_name(std::string_view stored_name, std::string& buffer) const;
};

// Every one of `params` from the checkpoint's files as f32 (zero-copy views of f32 tensors; f16 and bf16
// widened once), looked up by `prefix.stored_name`. A tensor of the file that is none of them, and
// for which `is_known_extra` (name without the prefix) is false, is an error: a checkpoint of another
// model is refused rather than half-used. `arch` names the architecture in that error.
// With `quant` (an MLX quantized checkpoint's config.json), a matrix whose module the file holds
// ".scales" for is read in its format (read_quantized_matrix) into `*quantized` under the param's
// name instead of the map (nothing is dequantized); a ".scales" tensor without `quant`, or of a
// module config.json keeps in floats, is an error. With `keep`, a param it does not select is
// checked (there, of its shape) but not read.
TensorMap read_named_weights(const Checkpoint& checkpoint, const ParamShapes& params, const NamePrefix& prefix,
                             const std::function<bool(std::string_view)>& is_known_extra, std::string_view arch,
                             const MlxQuantization* quant = nullptr, QuantizedMatrices* quantized = nullptr,
                             const ParamFilter& keep = {});

}  // namespace orion::model
