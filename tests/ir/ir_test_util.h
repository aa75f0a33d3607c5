#pragma once
// Helpers shared by the IR tests: node-for-node graph equality (tensor data compared bit for
// bit), and the message of the orion::Error an action throws.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/error.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/verifier.h"
#include "error_of.h"

namespace orion::ir::testing {

// The library's definitions of "the same" (ir/attr.h), under the names the tests use.
using ir::same_attr;
using ir::same_tensor;

inline void expect_same_graph(const Graph& want, const Graph& got) {
  EXPECT_EQ(want.name(), got.name());
  ASSERT_EQ(want.size(), got.size()) << "node counts differ";
  for (ValueId i = 0; i < want.size(); ++i) {
    const Node& a = want.node(i);
    const Node& b = got.node(i);
    SCOPED_TRACE("node #" + std::to_string(i) + " " + describe(a));
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.type, b.type) << a.type.str() << " vs " << b.type.str();
    ASSERT_EQ(a.attrs.size(), b.attrs.size());
    for (std::size_t k = 0; k < a.attrs.size(); ++k)
      EXPECT_TRUE(same_attr(a.attrs[k], b.attrs[k])) << "attribute #" << k << " differs";
  }
  EXPECT_EQ(want.outputs(), got.outputs());
}

using orion::testing::error_of;

// A node added without checks, its attributes completed by make_attrs.
inline ValueId add_node(Graph& g, Op op, std::string name, std::vector<ValueId> inputs,
                        TensorType type, NamedAttrs attrs = {}) {
  Node n;
  n.op = op;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.type = std::move(type);
  n.attrs = make_attrs(op, std::move(attrs));
  return g.add(std::move(n));
}

}  // namespace orion::ir::testing
