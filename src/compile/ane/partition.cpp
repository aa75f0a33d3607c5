#include "compile/ane/partition.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "compile/mil/mil_writer.h"
#include "compile/passes/lower_layout.h"
#include "compile/ane/weight_values.h"
#include "core/error.h"
#include "ir/builder.h"
#include "ir/type_rules.h"
#include "ir/verifier.h"

namespace orion::compile {

namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

constexpr int kNone = -1;  // inputs and weights: placed nowhere

std::size_t at(ValueId id) { return static_cast<std::size_t>(id); }

// Whether `n` computes a value without the token axis from values with it: a reduction over
// the tokens of a [S, X] (or [S]) value, a product of two runtime [S, X] values (a weight's
// gradient, x^T g, contracts the tokens), a scatter of rows by token id. What such a node
// makes is not a per-token value, which is all a kernel reads and writes.
bool drops_tokens(const ir::Graph& g, const Node& n, const std::vector<bool>& weight) {
  switch (n.op) {
    case Op::scatter_add: return true;
    case Op::reduce_sum:
    case Op::reduce_mean:
    case Op::reduce_max: {
      const int rank = static_cast<int>(g.node(n.inputs[0]).type.rank());
      const std::vector<int> axes = ir::reduce_axes(n, rank);
      const bool first = std::find(axes.begin(), axes.end(), 0) != axes.end();
      // A 3-D value's tokens are axis 0 ([S, H, D]) or 1 ([H, S, D]); reduced over both, it has
      // none either way (a per-head gain's gradient).
      if (rank == 3) return first && std::find(axes.begin(), axes.end(), 1) != axes.end();
      return rank <= 2 && first;
    }
    case Op::matmul:
      return !weight[at(n.inputs[0])] && !weight[at(n.inputs[1])] && g.node(n.inputs[0]).type.rank() == 2 &&
             g.node(n.inputs[1]).type.rank() == 2;
    default: return false;
  }
}

// The graph with every value but the params named by a MIL identifier, unique.
ir::Graph mil_named(const ir::Graph& graph, std::map<std::string, std::string>& renamed) {
  ir::Graph g = graph;
  std::unordered_set<std::string> used;
  for (const Node& n : g.nodes())
    if (n.op == Op::param) used.insert(n.name);
  for (ValueId id = 0; id < g.size(); ++id) {
    Node& n = g.node(id);
    if (n.op == Op::param) continue;
    const std::string base = mil_identifier(n.name);
    std::string name = base;
    for (int i = 1; used.contains(name); ++i) name = base + "_" + std::to_string(i);
    used.insert(name);
    n.name = name;
  }
  for (ValueId id : graph.nodes_of(Op::input)) renamed[graph.node(id).name] = g.node(id).name;
  for (ValueId id : graph.outputs()) renamed[graph.node(id).name] = g.node(id).name;
  return g;
}

class Partitioner {
 public:
  Partitioner(const ir::Graph& original, const PartitionOptions& o) : o_(o) {
    g_ = mil_named(original, result_.renamed);
    const auto n = at(g_.size());
    weight_ = weight_values(g_);
    users_.resize(n);
    is_output_.assign(n, false);
    for (ValueId id = 0; id < g_.size(); ++id)
      for (ValueId in : g_.node(id).inputs)
        if (users_[at(in)].empty() || users_[at(in)].back() != id) users_[at(in)].push_back(id);
    for (ValueId id : g_.outputs()) is_output_[at(id)] = true;
    cut_after_.assign(n, false);
    for (ValueId id = 0; id < original.size(); ++id) cut_after_[at(id)] = o.cut_after.contains(original.node(id).name);
    order_ = g_.topological_order();
    place(original);
    assign_stages();
  }

  Partition run() {
    int max_stage = 0;
    for (ValueId id : order_)
      if (placed(id)) max_stage = std::max(max_stage, stage_[at(id)]);
    for (int s = 0; s <= max_stage; ++s) {
      std::vector<ValueId> ane, host;
      for (ValueId id : order_) {
        if (!placed(id) || stage_[at(id)] != s) continue;
        (place_[at(id)] == static_cast<int>(Placement::ane) ? ane : host).push_back(id);
      }
      split_ane_stage(ane, s);
      if (!host.empty()) emit(host, Placement::host, s);
    }
    return std::move(result_);
  }

 private:
  bool placed(ValueId id) const { return place_[at(id)] != kNone; }
  bool on(ValueId id, Placement p) const { return place_[at(id)] == static_cast<int>(p); }

  // Values that carry the window's tokens: inputs with axes, and what is computed from one by
  // a node that keeps them (see drops_tokens).
  void find_token_values() {
    carries_tokens_.assign(at(g_.size()), false);
    for (ValueId id : order_) {
      const Node& n = g_.node(id);
      if (weight_[at(id)]) continue;
      if (n.op == Op::input) {
        carries_tokens_[at(id)] = n.type.rank() >= 1;
        continue;
      }
      if (drops_tokens(g_, n, weight_)) continue;
      for (ValueId in : n.inputs) carries_tokens_[at(id)] = carries_tokens_[at(id)] || carries_tokens_[at(in)];
    }
  }

  // A kernel reads [S, X] token-major values only: a node on a rank-1 graph input (the loss's
  // per-token weights) stays on the host with what it feeds.
  bool reads_token_vector(const Node& n) const {
    for (ValueId in : n.inputs)
      if (g_.node(in).op == Op::input && g_.node(in).type.rank() == 1 && is_float(g_.node(in).type.dtype)) return true;
    return false;
  }

  void place(const ir::Graph& original) {
    find_token_values();
    place_.assign(at(g_.size()), kNone);
    for (ValueId id = 0; id < g_.size(); ++id) {
      const Node& n = g_.node(id);
      if (n.op == Op::input || weight_[at(id)]) continue;
      const bool host = n.op == Op::gather || (n.op == Op::concat && !o_.target.allow_concat) ||
                        o_.host_nodes.contains(original.node(id).name) || !is_float(n.type.dtype) ||
                        (n.op != Op::concat && !kernel_op(n.op)) || !carries_tokens_[at(id)] || reads_token_vector(n);
      place_[at(id)] = static_cast<int>(host ? Placement::host : Placement::ane);
    }
    // Reshapes and transposes follow the host nodes they feed or read (see the header).
    for (bool changed = true; changed;) {
      changed = false;
      for (ValueId id = 0; id < g_.size(); ++id) {
        const Node& n = g_.node(id);
        if ((n.op != Op::reshape && n.op != Op::transpose) || !on(id, Placement::ane)) continue;
        bool feeds_host_only = !is_output_[at(id)] && !users_[at(id)].empty();
        for (ValueId u : users_[at(id)]) feeds_host_only = feeds_host_only && on(u, Placement::host);
        const ValueId in = n.inputs[0];
        const bool reads_host = on(in, Placement::host);
        if (feeds_host_only || reads_host) {
          place_[at(id)] = static_cast<int>(Placement::host);
          changed = true;
        }
      }
    }
  }

  // A host node runs after the kernels of its stage; an ANE node one stage after a host node
  // it reads.
  void assign_stages() {
    stage_.assign(at(g_.size()), 0);
    for (ValueId id : order_) {
      if (!placed(id)) continue;
      int s = 0;
      for (ValueId in : g_.node(id).inputs) {
        if (!placed(in)) continue;
        const bool crosses = on(in, Placement::host) && on(id, Placement::ane);
        s = std::max(s, stage_[at(in)] + (crosses ? 1 : 0));
      }
      stage_[at(id)] = s;
    }
    // ANE nodes that read only graph inputs (a decode step's KV-cache inputs split into heads)
    // run as late as their readers allow: else they would form a kernel of their own in the
    // first stage, whose outputs (per-head values over the cache) no kernel boundary carries.
    std::vector<bool> inputs_only(at(g_.size()), false);
    for (ValueId id : order_) {
      if (!on(id, Placement::ane)) continue;
      bool only = true;
      for (ValueId in : g_.node(id).inputs) only = only && (!placed(in) || inputs_only[at(in)]);
      inputs_only[at(id)] = only;
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const ValueId id = *it;
      if (!inputs_only[at(id)] || is_output_[at(id)] || users_[at(id)].empty()) continue;
      int latest = std::numeric_limits<int>::max();
      bool host_user = false;
      for (ValueId u : users_[at(id)]) {
        if (on(u, Placement::ane)) latest = std::min(latest, stage_[at(u)]);
        else host_user = true;
      }
      if (!host_user) stage_[at(id)] = std::max(stage_[at(id)], latest);
    }
  }

  // The weights node `id` reads directly.
  std::vector<ValueId> weights_read(ValueId id) const {
    std::vector<ValueId> w;
    for (ValueId in : g_.node(id).inputs)
      if (weight_[at(in)]) w.push_back(in);
    return w;
  }

  // The BLOBFILE tensors a use of weight `w` costs: none when small enough to be written inline,
  // a matrix's in the target's weight form (int8: data and scales...), else one.
  std::int64_t weight_slots(ValueId w) const {
    const ir::TensorType& t = g_.node(w).type;
    if (t.numel() <= MilWriteOptions{}.max_inline_elements) return 0;
    return t.rank() == 2 ? weight_form_tensors(o_.target.weights) : 1;
  }

  bool token_major(ValueId id) const {
    const ir::TensorType& t = g_.node(id).type;
    return t.rank() == 2 && t.shape[0] == o_.seq && is_float(t.dtype);
  }

  // How a value of three axes crosses between segments (see the header): per head [H, S, X]
  // or split into heads [S, H, D] inside a segment, token-major [S, H * X] between them.
  enum class Crossing : std::uint8_t { as_is, heads, head_split };
  Crossing crossing(ValueId id) const {
    const ir::TensorType& t = g_.node(id).type;
    if (t.rank() != 3 || !is_float(t.dtype) || is_output_[at(id)] || g_.node(id).op == Op::input) return Crossing::as_is;
    if (t.shape[1] == o_.seq) return Crossing::heads;
    if (t.shape[0] == o_.seq) return Crossing::head_split;
    return Crossing::as_is;
  }
  bool crosses_token_major(ValueId id) const { return token_major(id) || crossing(id) != Crossing::as_is; }

  // A name no value of the graph has, from `base`.
  std::string fresh_name(const std::string& base) const {
    std::string name = base;
    for (int i = 1; g_.find(name); ++i) name = base + "_" + std::to_string(i);
    return name;
  }

  struct Cut {
    bool valid = false;
    std::int64_t bytes = 0;  // values crossing into the rest of the stage
  };

  // Ending a kernel of stage nodes [begin, end) of `nodes` at `end`.
  // Stage positions come from stage_position_ (split_ane_stage sets it for `nodes`).
  Cut cut_at(const std::vector<ValueId>& nodes, std::size_t begin, std::size_t end) const {
    const auto position = [&](ValueId id) { return stage_position_[at(id)]; };  // -1: not in the stage
    const auto inside = [&](ValueId id) {
      const std::ptrdiff_t p = position(id);
      return p >= static_cast<std::ptrdiff_t>(begin) && p < static_cast<std::ptrdiff_t>(end);
    };
    Cut c{true, 0};
    for (std::size_t i = begin; i < end; ++i) {
      const ValueId id = nodes[i];
      bool leaves = is_output_[at(id)], to_rest = false;
      for (ValueId u : users_[at(id)]) {
        if (inside(u)) continue;
        leaves = true;
        to_rest = to_rest || position(u) >= static_cast<std::ptrdiff_t>(end);
      }
      if (leaves && !crosses_token_major(id)) c.valid = false;
      if (to_rest) c.bytes += device_bytes(g_.node(id).type);
    }
    return c;
  }

  void split_ane_stage(const std::vector<ValueId>& nodes, int stage) {
    stage_position_.assign(static_cast<std::size_t>(g_.size()), -1);
    for (std::size_t i = 0; i < nodes.size(); ++i) stage_position_[at(nodes[i])] = static_cast<std::ptrdiff_t>(i);
    std::size_t begin = 0;
    while (begin < nodes.size()) {
      // The longest run from `begin` whose weights fit.
      std::unordered_set<ValueId> seen;
      std::int64_t bytes = 0, tensors = 0;
      std::size_t end = begin;
      bool forced = false;
      for (; end < nodes.size(); ++end) {
        if (end > begin && cut_after_[at(nodes[end - 1])] && cut_at(nodes, begin, end).valid) {
          forced = true;
          break;
        }
        std::int64_t add = 0, add_tensors = 0;
        for (ValueId w : weights_read(nodes[end])) {
          if (!seen.contains(w)) add += device_bytes(g_.node(w).type);
          add_tensors += weight_slots(w);
        }
        if (o_.weight_tensor_budget > 0 && end > begin && tensors + add_tensors > o_.weight_tensor_budget) break;
        tensors += add_tensors;
        if (add > o_.target.on_chip_bytes)
          throw Error("partition: " + ir::describe(g_.node(nodes[end])) + " reads " + std::to_string(add) +
                      " bytes of weights, more than the " + std::to_string(o_.target.on_chip_bytes) + " on chip (ANE015): " +
                      (g_.node(nodes[end]).op == Op::matmul ? "split it first (chunk_matmuls)"
                                                            : "no rewrite splits it; allow more on-chip memory per kernel"));
        if (bytes + add > o_.target.on_chip_bytes) break;
        bytes += add;
        for (ValueId w : weights_read(nodes[end])) seen.insert(w);
      }
      if (end < nodes.size() && !forced) end = best_cut(nodes, begin, end);
      emit({nodes.begin() + static_cast<std::ptrdiff_t>(begin), nodes.begin() + static_cast<std::ptrdiff_t>(end)},
           Placement::ane, stage);
      begin = end;
    }
  }

  // Where to end the kernel that starts at `begin` and may run up to `limit` (exclusive).
  std::size_t best_cut(const std::vector<ValueId>& nodes, std::size_t begin, std::size_t limit) const {
    for (std::size_t from : {begin + (limit - begin + 1) / 2, begin + 1}) {
      std::size_t best = 0;
      std::int64_t best_bytes = 0;
      for (std::size_t end = std::max(from, begin + 1); end <= limit; ++end) {
        const Cut c = cut_at(nodes, begin, end);
        if (c.valid && (best == 0 || c.bytes <= best_bytes)) {
          best = end;
          best_bytes = c.bytes;
        }
      }
      if (best != 0) return best;
    }
    throw Error("partition: the kernel starting at " + ir::describe(g_.node(nodes[begin])) +
                " exceeds the on-chip budget, and no place to cut it has only token-major [" +
                std::to_string(o_.seq) + ", X] values crossing");
  }

  void emit(const std::vector<ValueId>& nodes, Placement p, int stage) {
    const std::unordered_set<ValueId> inside(nodes.begin(), nodes.end());
    Segment s;
    s.placement = p;
    s.stage = stage;
    s.name = o_.prefix + std::string(placement_name(p)) + std::to_string(counts_[static_cast<int>(p)]++);
    s.graph = ir::Graph(s.name);
    std::map<ValueId, ValueId> map;
    std::unordered_set<ValueId> weights_counted;
    // Weights first (with what they are computed from), then boundary inputs, then the nodes.
    std::vector<ValueId> needed_weights, boundary;
    for (ValueId id : nodes)
      for (ValueId in : g_.node(id).inputs) {
        if (inside.contains(in)) continue;
        if (weight_[at(in)]) {
          if (weights_counted.insert(in).second) s.weight_bytes += device_bytes(g_.node(in).type);
          collect_weight(in, needed_weights);
        } else if (std::find(boundary.begin(), boundary.end(), in) == boundary.end()) {
          boundary.push_back(in);
        }
      }
    std::sort(needed_weights.begin(), needed_weights.end());
    needed_weights.erase(std::unique(needed_weights.begin(), needed_weights.end()), needed_weights.end());
    for (ValueId w : needed_weights) map[w] = s.graph.add(remapped(g_.node(w), map));
    for (ValueId in : boundary) {
      const Node& v = g_.node(in);
      Node input;
      input.op = Op::input;
      input.name = v.name;
      input.type = v.type;
      const Crossing c = crossing(in);
      if (c == Crossing::as_is) {
        map[in] = s.graph.add(std::move(input));
        continue;
      }
      // Back from [S, H * X] to the value's own axes.
      const Shape& t = v.type.shape;
      const std::int64_t seq = o_.seq;
      const std::int64_t heads = c == Crossing::heads ? t[0] : t[1], width = t[2];
      input.type.shape = {seq, heads * width};
      ValueId x = s.graph.add(std::move(input));
      const std::string inner = fresh_name(v.name + "_heads");
      if (c == Crossing::heads) {
        x = ir::append_op(s.graph, Op::reshape, {x}, {{"shape", std::vector<std::int64_t>{seq, heads, width}}}, fresh_name(v.name + "_split"));
        x = ir::append_op(s.graph, Op::transpose, {x}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}}, inner);
      } else {
        x = ir::append_op(s.graph, Op::reshape, {x}, {{"shape", std::vector<std::int64_t>{seq, heads, width}}}, inner);
      }
      map[in] = x;
    }
    for (ValueId id : nodes) map[id] = s.graph.add(remapped(g_.node(id), map));
    for (ValueId id : nodes) {
      bool leaves = is_output_[at(id)];
      for (ValueId u : users_[at(id)]) leaves = leaves || !inside.contains(u);
      if (!leaves) continue;
      const Crossing c = crossing(id);
      if (c == Crossing::as_is) {
        s.graph.outputs().push_back(map.at(id));
        continue;
      }
      // Out as [S, H * X] under the value's name; the value itself is renamed inside.
      const std::string name = g_.node(id).name;
      s.graph.node(map.at(id)).name = fresh_name(name + "_heads");
      ValueId x = map.at(id);
      if (c == Crossing::heads)
        x = ir::append_op(s.graph, Op::transpose, {x}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}}, fresh_name(name + "_merge"));
      const Shape& t = s.graph.node(x).type.shape;
      s.graph.outputs().push_back(
          ir::append_op(s.graph, Op::reshape, {x}, {{"shape", std::vector<std::int64_t>{t[0], t[1] * t[2]}}}, name));
    }
    result_.segments.push_back(std::move(s));
  }

  void collect_weight(ValueId id, std::vector<ValueId>& out) const {
    out.push_back(id);
    for (ValueId in : g_.node(id).inputs) collect_weight(in, out);
  }

  static Node remapped(const Node& n, const std::map<ValueId, ValueId>& map) {
    Node c = n;
    for (ValueId& in : c.inputs) in = map.at(in);
    return c;
  }

  const PartitionOptions& o_;
  ir::Graph g_;
  Partition result_;
  std::vector<bool> weight_, is_output_, carries_tokens_;
  std::vector<bool> cut_after_;  // PartitionOptions::cut_after, by node
  std::vector<std::ptrdiff_t> stage_position_;  // by node: its place in the stage being split, or -1
  std::vector<std::vector<ValueId>> users_;
  std::vector<ValueId> order_;
  std::vector<int> place_, stage_;
  int counts_[2] = {0, 0};
};

}  // namespace

std::string_view placement_name(Placement p) { return p == Placement::ane ? "ane" : "host"; }

Partition partition_graph(const ir::Graph& graph, const PartitionOptions& options) {
  if (options.seq <= 0) throw Error("partition: the window's token count (seq) must be positive");
  return Partitioner(graph, options).run();
}

std::set<std::string, std::less<>> shape_varying_nodes(const ir::Graph& a, const ir::Graph& b) {
  if (a.size() != b.size())
    throw Error("shape_varying_nodes: the graphs have " + std::to_string(a.size()) + " and " +
                std::to_string(b.size()) + " nodes: not two sizes of one graph");
  std::set<std::string, std::less<>> out;
  for (ValueId id = 0; id < a.size(); ++id) {
    const Node &x = a.node(id), &y = b.node(id);
    if (x.op != y.op || x.name != y.name || x.inputs != y.inputs)
      throw Error("shape_varying_nodes: " + ir::describe(x) + " and " + ir::describe(y) +
                  " differ in more than shape: not two sizes of one graph");
    bool varies = x.type != y.type;
    for (ValueId in : x.inputs) varies = varies || a.node(in).type != b.node(in).type;
    if (varies && x.op != Op::input && x.op != Op::param) out.insert(x.name);
  }
  return out;
}

}  // namespace orion::compile
