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

namespace orion::ir::testing {

// Same dtype, shape and element bytes (so NaNs and signed zeros must match exactly).
inline bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw(), cb.raw(), ca.nbytes()) == 0;
}

// Equal as stored: a real compares by its bits, so -0.0 differs from 0.0 and NaN equals NaN.
inline bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Tensor>) return same_tensor(x, y);
        else if constexpr (std::is_same_v<T, double>) return std::memcmp(&x, &y, sizeof x) == 0;
        else return x == y;
      },
      a);
}

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

// The message of the orion::Error that `f` throws; a failure when it throws nothing or
// something else.
template <class F> std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const orion::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-orion exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

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
