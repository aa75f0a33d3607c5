#pragma once
// GPT-2 compiled for the ANE: the prefill and decode programs of a package
// (compile/ane_package_writer.h) and the session blocks that tell runtime/package_session.h
// which inputs and outputs are the tokens, positions, mask, logits and the KV cache.
//
//   prefill: gpt2_graph(seq = window, past = 0): every position's logits and keys/values.
//   decode:  gpt2_graph(seq = 1, past = capacity): one token after a fixed number of cache
//            slots, which the host masks. Compiled once for that shape; the nodes whose shapes
//            would change with the cache length (attention over the cache, found by building
//            the graph at two lengths) run on the host, everything per-token on the ANE.
#include <cstdint>
#include <string>
#include <vector>

#include "compile/ane_package_writer.h"
#include "model/gpt2_config.h"

namespace orion::model {

struct Gpt2PackageShape {
  std::int64_t window = 128;   // prefill tokens; --seq
  std::int64_t capacity = 0;   // decode cache slots; 0: n_positions - 1 (the whole context)
};

std::vector<compile::ProgramSpec> gpt2_ane_programs(const Gpt2Config& config, const Gpt2PackageShape& shape);

// What `orion inspect` shows of the model a package came from.
nlohmann::json gpt2_package_model_info(const Gpt2Config& config, const std::string& source);

}  // namespace orion::model
