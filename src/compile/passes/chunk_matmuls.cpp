#include "compile/passes/chunk_matmuls.h"

#include <string>

#include "ir/transforms/rewriter.h"
#include "compile/ane/weight_values.h"
#include "core/error.h"

namespace orion::compile {

namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

// The number of pieces matmul `n` is split into (1: left as it is).
std::int64_t pieces_of(const ir::Graph& g, const Node& n, const std::vector<bool>& weight, std::int64_t max_bytes) {
  if (n.op != Op::matmul) return 1;
  const Node& w = g.node(n.inputs[1]);
  if (!weight[static_cast<std::size_t>(n.inputs[1])] || weight[static_cast<std::size_t>(n.inputs[0])]) return 1;
  if (w.type.rank() != 2 || n.attr_bool("transpose_x")) return 1;
  const std::int64_t bytes = device_bytes(w.type);
  if (bytes <= max_bytes) return 1;
  const std::int64_t out = n.attr_bool("transpose_y") ? w.type.shape[0] : w.type.shape[1];
  const std::int64_t pieces = (bytes + max_bytes - 1) / max_bytes;
  if (pieces > out)
    throw Error("chunk_matmuls: " + ir::describe(n) + " cannot be split into pieces of at most " +
                std::to_string(max_bytes) + " bytes: one output column of its weight takes more");
  return pieces;
}

}  // namespace

int chunk_matmuls(ir::Graph& graph, std::int64_t max_bytes) {
  if (max_bytes <= 0) throw Error("chunk_matmuls: the weight budget must be positive");
  const std::vector<bool> weight = weight_values(graph);
  ir::GraphRewriter rw(graph);
  int split = 0;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& n = graph.node(id);
    const std::int64_t pieces = pieces_of(graph, n, weight, max_bytes);
    if (pieces == 1) {
      rw.copy(id);
      continue;
    }
    const Shape& ws = graph.node(n.inputs[1]).type.shape;
    const bool ty = n.attr_bool("transpose_y");
    const int axis = ty ? 0 : 1;  // the weight's output axis
    const std::int64_t out = ws[static_cast<std::size_t>(axis)];
    const std::int64_t step = (out + pieces - 1) / pieces;
    std::vector<ValueId> parts;
    for (std::int64_t begin = 0, i = 0; begin < out; begin += step, ++i) {
      std::vector<std::int64_t> b{0, 0}, e = ws;
      b[static_cast<std::size_t>(axis)] = begin;
      e[static_cast<std::size_t>(axis)] = std::min(out, begin + step);
      const std::string base = n.name + ".chunk" + std::to_string(i);
      const ValueId w = rw.op(Op::slice, {rw.map(n.inputs[1])}, {{"begin", b}, {"end", e}}, base + ".weight");
      parts.push_back(rw.op(Op::matmul, {rw.map(n.inputs[0]), w}, ir::named_attrs(n), base));
    }
    const ValueId joined = rw.op(Op::concat, parts, {{"axis", std::int64_t{n.type.rank() - 1}}}, n.name + ".joined");
    rw.take_over(id, joined);
    ++split;
  }
  if (split > 0) graph = rw.finish();
  return split;
}

std::unique_ptr<ir::Pass> chunk_matmuls_pass(std::int64_t max_bytes) {
  return ir::make_pass("chunk_matmuls", [max_bytes](ir::Graph& g, ir::PassContext& c) {
    const int n = chunk_matmuls(g, max_bytes);
    if (n > 0)
      c.note(std::to_string(n) + " matmul(s) split into pieces of at most " + std::to_string(max_bytes) +
             " weight bytes");
    return n > 0;
  });
}

}  // namespace orion::compile
