#pragma once
// The verifier: what every graph must satisfy before it runs or is compiled, and after every
// pass. Each message names the node ("%h (matmul): ...").
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace orion::ir {

// The type a node's op gives its inputs' types; throws orion::Error with a message that does
// not name the node (callers add it). Source nodes return their declared type.
TensorType infer_type(const Graph& graph, const Node& node);

// A node's attributes, complete and in declaration order, from (name, value) pairs: unknown
// names, duplicates, wrong kinds and missing required attributes throw orion::Error; an
// integer is accepted for a real. Absent optional attributes take their defaults.
std::vector<AttrValue> make_attrs(Op op, std::vector<std::pair<std::string, AttrValue>> given);

// Every problem found, one message each; empty when the graph is valid.
std::vector<std::string> check_graph(const Graph& graph);
// Throws orion::Error with the first problem (and how many more there are).
void verify(const Graph& graph);

}  // namespace orion::ir
