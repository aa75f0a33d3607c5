#pragma once
// GraphRewriter: builds a new graph from an old one in a single walk, the way every structural
// pass changes a graph (see pass.h). The pass visits the old nodes in order and for each one
// copies it, drops it, maps it to a value already emitted, or emits a replacement; the rewriter
// keeps the map from old values to new ones and remaps inputs and outputs.
//
// Names: a copied node keeps its name, and a replacement takes over the name of the node it
// replaces (take_over), so a graph's inputs and outputs keep the names the ANE binds them by
// and the text of the rest stays readable. New nodes are named by the pass ("h.gelu_3.cube");
// a name already used in the old or new graph gets a suffix "_1", "_2"... so the result is
// deterministic and never collides with a name a later copy will claim.
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"

namespace orion::ir {

// A node's attributes by name, to build a like node with some of them changed.
ir::NamedAttrs named_attrs(const ir::Node& n);
// Sets attribute `name` of `attrs` (which must have it) to `value`.
void set_attr(ir::NamedAttrs& attrs, std::string_view name, ir::AttrValue value);

class GraphRewriter {
 public:
  explicit GraphRewriter(const ir::Graph& source);

  const ir::Graph& source() const { return source_; }
  const ir::Graph& result() const { return graph_; }
  const ir::Node& node(ir::ValueId now) const { return graph_.node(now); }

  // The new value that stands for old value `old`; throws orion::Error when it has none yet.
  ir::ValueId map(ir::ValueId old) const;
  bool mapped(ir::ValueId old) const;
  // Later reads of `old` read `now` instead.
  void set_map(ir::ValueId old, ir::ValueId now);

  // The old node, inputs remapped, same name, type and attributes. Maps old to the copy.
  ir::ValueId copy(ir::ValueId old);
  // A node of `op` on new values `inputs`, its type inferred (a type rule's error throws, naming
  // the node), named `name` or a suffixed variant of it.
  ir::ValueId op(ir::Op op, std::vector<ir::ValueId> inputs, ir::NamedAttrs attrs,
                 std::string_view name);
  ir::ValueId constant(Tensor value, std::string_view name);
  // A rank-0 constant of `dtype` (rounded to it).
  ir::ValueId scalar(double value, DType dtype, std::string_view name);
  // A node exactly as given (inputs are new ids), named uniquely; no checks.
  ir::ValueId add(ir::Node node);

  // New value `now` replaces old value `old`: it takes old's name (so outputs keep theirs) and
  // later reads of old read it.
  void take_over(ir::ValueId old, ir::ValueId now);

  // The new graph, its outputs the new values of the old outputs. The rewriter is spent.
  ir::Graph finish();

 private:
  std::string unique_name(std::string_view wanted) const;

  const ir::Graph& source_;
  ir::Graph graph_;
  std::vector<ir::ValueId> map_;
  std::unordered_set<std::string> source_names_;
  std::unordered_set<std::string> names_;  // used in the new graph
};

}  // namespace orion::ir
