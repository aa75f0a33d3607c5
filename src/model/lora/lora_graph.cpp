#include "model/lora/lora_graph.h"

#include <algorithm>
#include <map>
#include <optional>

#include "core/error.h"
#include "ir/transforms/rewriter.h"
#include "ir/verifier.h"

namespace orion::model {

namespace {

constexpr std::string_view kWeightSuffix = ".weight";

// The targeted module whose weight matmul node `n` multiplies by, with its sizes.
std::optional<LoraModule> targeted(const ir::Graph& g, const ir::Node& n, const LoraConfig& c) {
  if (n.op != ir::Op::matmul || n.attr_bool("transpose_x")) return std::nullopt;
  const ir::Node& w = g.node(n.inputs[1]);
  if (w.op != ir::Op::param || !w.name.ends_with(kWeightSuffix) || w.type.shape.size() != 2) return std::nullopt;
  const std::string module = w.name.substr(0, w.name.size() - kWeightSuffix.size());
  if (!lora_targets_module(c, module)) return std::nullopt;
  const bool t = n.attr_bool("transpose_y");  // nn.Linear's [out, in]; else Conv1D's [in, out]
  return LoraModule{module, w.type.shape[t ? 1 : 0], w.type.shape[t ? 0 : 1], t};
}

}  // namespace

std::string lora_a_name(const std::string& module) { return module + ".lora_A.weight"; }
std::string lora_b_name(const std::string& module) { return module + ".lora_B.weight"; }

std::vector<LoraModule> lora_modules(const ir::Graph& graph, const LoraConfig& config) {
  std::map<std::string, LoraModule> found;
  for (const ir::Node& n : graph.nodes())
    if (auto m = targeted(graph, n, config)) found.emplace(m->name, *m);
  std::vector<LoraModule> out;
  for (auto& [name, m] : found) out.push_back(std::move(m));
  return out;
}

ir::Graph with_lora(const ir::Graph& graph, const LoraConfig& config, double scale) {
  if (config.rank < 1) throw Error("lora: the rank must be at least 1, not " + std::to_string(config.rank));
  ir::GraphRewriter r(graph);
  std::map<std::string, std::pair<ir::ValueId, ir::ValueId>> params;  // module -> (A, B), made once
  const auto param = [&](const std::string& name, std::int64_t rows, std::int64_t cols) {
    ir::Node p;
    p.op = ir::Op::param;
    p.name = name;
    p.type = {DType::f32, {rows, cols}};
    p.attrs = ir::make_attrs(ir::Op::param, {});
    const ir::ValueId id = r.add(std::move(p));
    if (r.node(id).name != name) throw Error("lora: the graph " + graph.name() + " has a value named " + name + " already");
    return id;
  };
  int changed = 0;
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& n = graph.node(id);
    const std::optional<LoraModule> m = targeted(graph, n, config);
    if (!m) {
      r.copy(id);
      continue;
    }
    auto it = params.find(m->name);
    if (it == params.end())
      it = params.emplace(m->name, std::pair{param(lora_a_name(m->name), config.rank, m->in),
                                             param(lora_b_name(m->name), m->out, config.rank)}).first;
    const ir::ValueId x = r.map(n.inputs[0]);
    const ir::ValueId base = r.op(ir::Op::matmul, {x, r.map(n.inputs[1])}, ir::named_attrs(n), n.name + ".base");
    const ir::NamedAttrs nt = {{"transpose_x", false}, {"transpose_y", true}};
    const ir::ValueId down = r.op(ir::Op::matmul, {x, it->second.first}, nt, n.name + ".lora_down");
    ir::ValueId delta = r.op(ir::Op::matmul, {down, it->second.second}, nt, n.name + ".lora_up");
    if (scale != 1.0)
      delta = r.op(ir::Op::mul, {delta, r.scalar(scale, r.node(delta).type.dtype, n.name + ".lora_scale")}, {},
                   n.name + ".lora_scaled");
    const ir::ValueId sum = r.op(ir::Op::add, {base, delta}, {}, n.name + ".lora");
    r.take_over(id, sum);
    ++changed;
  }
  if (changed == 0) {
    std::string targets;
    for (const std::string& t : config.targets) targets += (targets.empty() ? "" : ", ") + t;
    throw Error("lora: the targets (" + targets + ") name no linear layer of the graph " + graph.name());
  }
  return r.finish();
}

}  // namespace orion::model
