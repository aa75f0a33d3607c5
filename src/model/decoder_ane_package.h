#pragma once
// A decoder compiled for the ANE: the prefill and decode programs of a package
// (compile/ane/ane_package_writer.h) and the session blocks that tell runtime/package_session.h
// which inputs and outputs are the tokens, positions, mask, logits and the KV cache. Any
// architecture whose graphs keep model/causal_lm.h's conventions, in their ANE form.
//
//   prefill: the graph of a whole window (seq = window, past = 0): every position's logits and
//            keys/values.
//   decode:  one token after a fixed number of cache slots (seq = 1, past = capacity), which
//            the host masks. Compiled once for that shape, so nothing in it varies with the
//            number of valid positions (the mask does that): attention over the cache runs in
//            the ANE kernels (the ANE form keeps the cache apart from the token,
//            model/attention.h), whose past_k/past_v inputs are fixed-length [1, C, 1, capacity]
//            surfaces the runtime keeps resident between steps (runtime/package_session.h).
//            The capacity is then a multiple of 32 (ANE011: those surfaces are not padded).
//            With `host_attention` the old placement: the nodes whose shapes would change with
//            the cache length (found by building the graph at two lengths) on the host, the
//            cache packed from host tensors every step; any capacity.
//   extend (with `chunk` > 1): `chunk` tokens of a prompt after the cache's slots, attending to
//            the cache through the mask and to each other causally (model/attention.h): a
//            prompt longer than the prefill window goes on in chunks, compiling nothing new.
//            Its cache inputs are decode's, kept in step with them by the runtime.
//   decode_batch (with `batch` > 1): one token of each of `batch` sequences in one run, their
//            caches side by side in one [1, C, 1, batch * capacity] surface per cache input,
//            each row's mask opening its own part (DecoderGraphOptions::sequences): the
//            weights are read once for all of them, as the CPU server's batched decoding does.
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "compile/ane/ane_package_writer.h"
#include "model/causal_lm.h"
#include "model/gpt2/gpt2_config.h"

namespace orion::model {

struct AnePackageShape {
  std::int64_t window = 128;   // prefill tokens; --seq
  std::int64_t capacity = 0;   // decode cache slots; 0: the whole context - 1 (rounded down to 32 on the
                               // device; a context under 33 keeps attention on the host)
  bool host_attention = false;  // attention over the cache on the host (see above)
  std::int64_t batch = 0;       // > 1: a decode_batch program of that many sequences (a server's)
  std::int64_t chunk = 0;       // > 1: an extend program of that many tokens (long prompts)
  // The residual stream divided by this on the device (CausalLm::ane_graph): a power of two that
  // keeps it inside fp16's range (engine/residual_probe.h chooses it); 1: as it is.
  double residual_scale = 1;
};

// graph_at(seq, past, sequences): the decoder's ANE-form graph of a window of `seq` after `past`
// cached positions (of `sequences` sequences side by side). Throws orion::Error, naming `arch`,
// for a window or cache that does not fit `context`. `local_window` > 0 (CausalLm::local_window):
// the programs after a cache also take "mask_local", named in their session blocks with the
// window ("window"), which the sessions fill.
using AneGraphAt = std::function<ir::Graph(std::int64_t seq, std::int64_t past, std::int64_t sequences)>;
// Layers with a recurrent state instead of a KV cache (CausalLm::recurrent_state: Qwen3.5's
// Gated DeltaNet): their session entries are "state" ({"new": "conv.L", "past": "past_conv.L"},
// and state.L's), whole values the session passes in and takes back each step, and `host_of`
// names the nodes of a program's graph that run on the host (CausalLm::ane_host_nodes). A
// package of such layers has no extend or decode_batch program.
struct AneRecurrence {
  std::vector<bool> layers;  // per layer; empty: none
  std::function<std::set<std::string, std::less<>>(const ir::Graph&)> host_of;
};
std::vector<compile::ProgramSpec> decoder_ane_programs(const AneGraphAt& graph_at, std::int64_t layers,
                                                       std::int64_t context, const AnePackageShape& shape,
                                                       const std::string& arch, std::int64_t local_window = 0,
                                                       const AneRecurrence& recurrence = {});

// A loaded model's programs (CausalLm::ane_graph), and GPT-2's from its config alone.
std::vector<compile::ProgramSpec> ane_programs(const CausalLm& model, const AnePackageShape& shape);
std::vector<compile::ProgramSpec> gpt2_ane_programs(const Gpt2Config& config, const AnePackageShape& shape);

// What `orion inspect` shows of the model a package came from: its architecture, config and source.
nlohmann::json package_model_info(const CausalLm& model, const std::string& source);
nlohmann::json gpt2_package_model_info(const Gpt2Config& config, const std::string& source);

}  // namespace orion::model
