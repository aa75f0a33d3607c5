#include "compile/ane/kernel_sharing.h"

#include "compile/mil/mil_writer.h"
#include "core/content_hash.h"
#include "core/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace orion::compile {

CanonicalKernel canonical_kernel(const ir::Graph& segment) {
  CanonicalKernel c;
  c.graph = segment;
  c.graph.set_name("kernel");
  std::vector<std::string> given(static_cast<std::size_t>(c.graph.size()));
  for (int id = 0; id < c.graph.size(); ++id) given[static_cast<std::size_t>(id)] = c.graph.node(id).name;
  std::map<int, WeightPart> parts;  // by node
  for (int id = 0; id < c.graph.size(); ++id) {
    ir::Node& n = c.graph.node(id);
    if (n.op != ir::Op::slice || c.graph.node(n.inputs[0]).op != ir::Op::param) continue;
    const ir::Node& p = c.graph.node(n.inputs[0]);
    const auto& begin = n.attr_ints("begin");
    const auto& end = n.attr_ints("end");
    int axis = -1, axes = 0;
    for (std::size_t a = 0; a < begin.size(); ++a)
      if (begin[a] != 0 || end[a] != p.type.shape[a]) {
        axis = static_cast<int>(a);
        ++axes;
      }
    if (axes != 1 || p.type.rank() != 2) continue;
    parts[id] = {axis, begin[static_cast<std::size_t>(axis)], end[static_cast<std::size_t>(axis)]};
    given[static_cast<std::size_t>(id)] = p.name;  // what the step binds it to: the param, in part
    n.op = ir::Op::param;
    n.inputs.clear();
    n.attrs = ir::make_attrs(ir::Op::param, {});
  }
  int inputs = 0, params = 0, others = 0;
  for (int id = 0; id < c.graph.size(); ++id) {
    ir::Node& n = c.graph.node(id);
    if (n.op == ir::Op::input) n.name = "x" + std::to_string(inputs++);
    else if (n.op == ir::Op::param) n.name = "p" + std::to_string(params++);
    else n.name = "n" + std::to_string(others++);
  }
  const std::vector<ir::ValueId>& outs = c.graph.outputs();
  for (std::size_t k = 0; k < outs.size(); ++k) {
    ir::Node& n = c.graph.node(outs[k]);
    if (n.op == ir::Op::input || n.op == ir::Op::param || n.name[0] == 'y')
      throw Error("kernel sharing: output " + given[static_cast<std::size_t>(outs[k])] +
                  " is an input, a param or a second output of one value: a kernel computes each output");
    n.name = "y" + std::to_string(k);
  }
  for (int id = 0; id < c.graph.size(); ++id) {
    const ir::Node& n = c.graph.node(id);
    if (n.name[0] != 'n') c.names.emplace(n.name, given[static_cast<std::size_t>(id)]);
    if (auto part = parts.find(id); part != parts.end()) c.parts.emplace(n.name, part->second);
  }
  ContentHasher h;
  h.update(ir::print_graph(c.graph));
  c.key = h.hex();
  return c;
}

std::map<std::string, std::string> step_bind(const CanonicalKernel& kernel, const KernelIo& io) {
  std::map<std::string, std::string> bind;
  const auto step_name = [&](const std::string& name) -> const std::string& {
    auto it = kernel.names.find(name);
    if (it == kernel.names.end()) throw Error("kernel sharing: the kernel's I/O names " + name + ", which its graph does not");
    return it->second;
  };
  for (const auto* list : {&io.inputs, &io.outputs})
    for (const KernelIoTensor& t : *list) {
      if (t.weight.empty()) {
        bind[t.name] = step_name(t.name);
        continue;
      }
      const std::string& param = step_name(t.weight);
      bind[t.weight] = param;
      const std::string prefix = "w_" + mil_identifier(t.weight);
      if (t.name.rfind(prefix, 0) != 0)
        throw Error("kernel sharing: weight input " + t.name + " is not named for its param " + t.weight);
      bind[t.name] = "w_" + mil_identifier(param) + t.name.substr(prefix.size());
    }
  return bind;
}

}  // namespace orion::compile
