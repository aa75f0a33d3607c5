#pragma once
// partition_graph: a model graph (token-major IR with params, as the model builders make it)
// cut into the segments a runtime runs in order: ANE kernels and host segments.
//
// What runs on the host, and why:
//  * ops the ANE does not run on this path: gather (the embedding lookup: integer indices),
//    concat unless opted in (ANE004; the KV-cache append and the join of chunked matmuls);
//  * nodes the caller names (`host_nodes`): for decoding, every node whose shape changes with
//    the step (shape_varying_nodes below: attention over the KV cache), because a kernel is
//    compiled for fixed shapes and compiles are scarce (ANE030);
//  * the reshapes and transposes that only feed host nodes, or only read host values: moving
//    them keeps every kernel boundary a token-major [S, X] value, the only layout a kernel's
//    inputs and outputs have (lower_layout);
//  * ops no kernel holds (lower_layout's kernel_op: the loss, scatter_add, where...), and
//    values that do not carry the window's tokens: a training graph's weight gradients (x^T g
//    contracts the tokens; a bias's gradient sums them), the loss, and what is computed from
//    them. A kernel computes per-token values only; the sums over tokens are host work, in f32.
// A value of three axes that crosses between segments (a training graph's attention
// probabilities [H, S, S] or per-head q [H, S, D], made in the forward kernel and read by the
// backward one) crosses as the token-major [S, H * X] lower_layout knows how to merge and
// split: the producer writes it so, under the value's name, and each reader splits it again.
// Weights (params, constants and values computed from them alone) belong to no segment: each
// segment that reads one gets its own copy, so a kernel bakes exactly the weights it uses.
//
// Stages: a host node runs after the kernels it reads from, an ANE node after the host nodes
// it reads from, and as early as that allows; all ANE nodes of one stage form one kernel unless
// their weights exceed the on-chip budget (ANE015), in which case the stage is cut, in node
// order, into kernels that each fit. A cut goes where only token-major values cross, choosing
// among the later half of the possible places the one that moves the fewest bytes (layer
// boundaries, for a transformer). Fewer kernels would break a rule; more would only cost
// compiles and dispatches.
//
// Names: every value's name is made a MIL identifier first (mil_identifier: "k.0" -> "k_0"),
// so that the names a kernel binds by are the graph's; `renamed` says what became of the
// graph's inputs and outputs.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compile/ane/ane_validator.h"
#include "ir/graph.h"

namespace orion::compile {

enum class Placement : std::uint8_t { ane, host };

std::string_view placement_name(Placement p);

struct PartitionOptions {
  AneTarget target;                              // on_chip_bytes, allow_concat
  std::int64_t seq = 0;                          // tokens in the window: kernel I/O is [seq, X]
  std::set<std::string, std::less<>> host_nodes;  // by the graph's names
  std::string prefix;                            // segment names: prefix + "ane3", prefix + "host1"
  // Nodes a kernel ends after (the last node of each layer of a model): the kernels between two
  // are cut alike, so that the layers' kernels are equal but for names and can share a program
  // (kernel_sharing.h). A kernel still ends earlier where the budgets below say so.
  std::set<std::string, std::less<>> cut_after;
  // Weight tensors a kernel may read (ANE037), each use of a weight counted once (twice for an
  // int8 matrix: its data and its scales); 0: no limit. Packages set target.max_weight_tensors
  // - 1 (a slot for scalar operands). Training kernels do not: lowering adds constants to them
  // that the count here does not foresee (docs/ane/RULES.md, ANE037).
  std::int64_t weight_tensor_budget = 0;
};

struct Segment {
  Placement placement = Placement::ane;
  std::string name;
  int stage = 0;
  // Standalone: its inputs are graph inputs or other segments' outputs, by name; its params are
  // the model's (bound by name); its outputs are what later segments or the model read.
  ir::Graph graph;
  std::int64_t weight_bytes = 0;  // fp16 bytes of the weights it reads
};

struct Partition {
  std::vector<Segment> segments;                 // in run order
  std::map<std::string, std::string> renamed;    // the graph's input/output names -> values' names
};

Partition partition_graph(const ir::Graph& graph, const PartitionOptions& options);

// The names of the nodes of `a` whose type, or an input's type, differs in `b`: two builds of
// one graph at different sizes (a decode step at two cache lengths). Throws orion::Error when
// the two are not the same graph apart from shapes.
std::set<std::string, std::less<>> shape_varying_nodes(const ir::Graph& a, const ir::Graph& b);

}  // namespace orion::compile
