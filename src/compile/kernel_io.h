#pragma once
// A compiled kernel's interface as the runtime binds it: each input and output as a [1, C, 1, S]
// fp16 surface, in binding order, with the allocation size of each direction. The
// legalize_io pass (compile/passes/legalize_io.h) computes it; packages store it on disk
// (compile/ane/ane_package.h); the devices and the runtime pack and unpack by it.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace orion::compile {

struct KernelIoTensor {
  std::string name;        // the graph's (IR) name; the MIL writer keeps it when it is an identifier
  Shape logical;           // [1, C, 1, S]
  Shape padded;            // [1, C', 1, S_pad]: what the program declares (C' = C unless pad_channels)
  std::int64_t bytes = 0;  // the packed fp16 tensor's size (<= the direction's allocation)
  // A fixed-length input (a KV cache): its S is its own (logical[3] == padded[3]), not the
  // kernel's tokens; the runtime may keep it resident in its surface between calls.
  bool fixed = false;
  // A runtime weight (compile/passes/lower_layout.h): the param this input carries, empty for
  // activations. Always fixed. Layout: the param's IR [A, B] (a vector [N] as [1, N]) at
  // [1, A, 1, B_pad], element (a, b) in column b of channel a, B_pad = B rounded up to 32 with
  // zeros after B (ANE011); the host writes it into the resident surface when weights change.
  std::string weight;
  // A part of that param (a weight the on-chip budget cut into chunks, each chunk its own
  // input): rows or columns [begin, end) along `axis` (0 or 1); axis -1: the whole param.
  int weight_axis = -1;
  std::int64_t weight_begin = 0, weight_end = 0;

  bool operator==(const KernelIoTensor&) const = default;
};

struct KernelIo {
  std::int64_t seq = 0;         // real tokens
  std::int64_t padded_seq = 0;  // S_pad
  // In binding order: alphabetical by name (ANE027), whatever the graph's order.
  std::vector<KernelIoTensor> inputs, outputs;
  std::int64_t input_bytes = 0, output_bytes = 0;  // the allocation of every surface of a direction

  bool operator==(const KernelIo&) const = default;
};

}  // namespace orion::compile
