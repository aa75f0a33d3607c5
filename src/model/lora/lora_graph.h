#pragma once
// LoRA in a model's graph: every matmul whose weight is a targeted module's param
// (`<module>.weight`, model/lora/lora_config.h) gains the low-rank path beside it,
//   y = x W(^T) + scale * (x A^T) B^T,   A = `<module>.lora_A.weight` [rank, in],
//                                          B = `<module>.lora_B.weight` [out, rank]
// with A and B new params. A graph transform rather than a flag of each graph builder: the
// training graphs, their ANE form and the decoding graphs of every architecture gain LoRA the
// same way, and the shapes of A and B follow from the weight's, whichever layout (GPT-2's
// Conv1D [in, out], Llama's nn.Linear [out, in]).
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "model/lora/lora_config.h"

namespace orion::model {

struct LoraModule {
  std::string name;  // "h.3.attn.c_attn"
  std::int64_t in = 0, out = 0;
  bool out_major = true;  // its weight is stored [out, in] (nn.Linear), else [in, out] (Conv1D)
};

// The modules of `graph` that `config` targets, sorted by name.
std::vector<LoraModule> lora_modules(const ir::Graph& graph, const LoraConfig& config);

std::string lora_a_name(const std::string& module);  // "<module>.lora_A.weight"
std::string lora_b_name(const std::string& module);  // "<module>.lora_B.weight"

// `graph` with the low-rank path on every targeted module, the path's product multiplied by
// `scale` (1: no multiply, for a caller that scales B itself). Throws orion::Error when
// `config` targets no module of the graph.
ir::Graph with_lora(const ir::Graph& graph, const LoraConfig& config, double scale);

}  // namespace orion::model
