#include "ir/transforms/bind_params.h"

#include "core/error.h"
#include "ir/verifier.h"

namespace orion::ir {

int bind_params(ir::Graph& graph, const TensorMap& values, const BindParamsOptions& options) {
  // In place: each param becomes a constant where it stands, so no id changes.
  int bound = 0;
  for (ir::Node& n : graph.nodes()) {
    if (n.op != ir::Op::param) continue;
    auto it = values.find(n.name);
    if (it == values.end()) {
      if (options.require_all) throw Error("bind_params: no value for param " + ir::describe(n));
      continue;
    }
    const Tensor& t = it->second;
    if (!t.defined()) throw Error("bind_params: the value of " + ir::describe(n) + " is undefined");
    const bool float_ok = is_float(t.dtype()) && is_float(n.type.dtype);
    if (t.shape() != n.type.shape || (t.dtype() != n.type.dtype && !float_ok))
      throw Error("bind_params: param " + ir::describe(n) + " is " + n.type.str() + ", its value is " +
                  std::string(dtype_name(t.dtype())) + shape_str(t.shape()));
    n.op = ir::Op::constant;
    n.attrs = ir::make_attrs(ir::Op::constant,
                             {{"value", t.dtype() == n.type.dtype ? t.contiguous() : t.to(n.type.dtype)}});
    ++bound;
  }
  return bound;
}

std::unique_ptr<Pass> bind_params_pass(const TensorMap& values, BindParamsOptions options) {
  return make_pass("bind_params", [&values, options](ir::Graph& g, PassContext& c) {
    const int n = bind_params(g, values, options);
    if (n) c.note("bound " + std::to_string(n) + (n == 1 ? " param" : " params"));
    return n > 0;
  });
}

}  // namespace orion::ir
