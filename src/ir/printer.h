#pragma once
// The printer of the IR text form (grammar in parser.h): one node per line in node order, every
// attribute of every node in op-table order, numbers in the shortest spelling that reads back
// to the same bits. parse_graph(print_graph(g)) equals g, node for node, and printing it again
// gives the same text, for every graph the verifier accepts whose name is an identifier and
// whose nodes come after their inputs (the order passes and the builder keep).
//
// The printer does not verify: it prints any graph it is given, so that a broken graph can be
// looked at. What cannot be spelled validly is printed so that the parser rejects it: an input
// or output that refers to no node as `%<#7>`, an undefined tensor as `<undefined>`.
#include <string>

#include "ir/graph.h"

namespace orion::ir {

std::string print_graph(const Graph& graph);

}  // namespace orion::ir
