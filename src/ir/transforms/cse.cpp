#include "ir/transforms/cse.h"

#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "ir/transforms/rewriter.h"

namespace orion::ir {

namespace {

// FNV-1a: a stable hash (std::hash of a string may differ between libraries, and the merge
// order must not depend on it anyway: buckets only group candidates, equality decides).
struct Hasher {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  template <class T> void value(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof v);
  }
};

void hash_attr(Hasher& h, const ir::AttrValue& a) {
  h.value(a.index());
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          if (!x.defined()) return;
          // A sample of a large tensor's bytes (the head, a 3072 x 768 weight): buckets only
          // group candidates and equality decides, and hashing every byte of a model's weights
          // byte by byte was a large part of a GPT-2 124M compile (docs/PERFORMANCE.md,
          // "Smaller measurements behind the code").
          const Tensor c = x.contiguous();
          constexpr std::size_t kWhole = 4096, kSamples = 256;
          if (c.nbytes() <= kWhole) {
            h.bytes(c.raw(), c.nbytes());
          } else {
            h.value(c.nbytes());
            h.bytes(c.raw(), kWhole);
            const std::size_t step = (c.nbytes() - 8) / kSamples;
            for (std::size_t i = 0; i < kSamples; ++i) h.bytes(c.raw() + i * step, 8);
            h.bytes(c.raw() + c.nbytes() - 8, 8);
          }
        } else if constexpr (std::is_same_v<T, std::string>) {
          h.bytes(x.data(), x.size());
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          h.bytes(x.data(), x.size() * sizeof(std::int64_t));
        } else {
          h.value(x);
        }
      },
      a);
}

// A node as it reads in the new graph: inputs are new ids.
std::uint64_t hash_node(const ir::Node& n) {
  Hasher h;
  h.value(n.op);
  h.value(n.type.dtype);
  h.bytes(n.type.shape.data(), n.type.shape.size() * sizeof(std::int64_t));
  h.bytes(n.inputs.data(), n.inputs.size() * sizeof(ir::ValueId));
  for (const ir::AttrValue& a : n.attrs) hash_attr(h, a);
  return h.h;
}

bool same_node(const ir::Node& a, const ir::Node& b) {
  if (a.op != b.op || a.type != b.type || a.inputs != b.inputs || a.attrs.size() != b.attrs.size())
    return false;
  for (std::size_t i = 0; i < a.attrs.size(); ++i)
    if (!ir::same_attr(a.attrs[i], b.attrs[i])) return false;
  return true;
}

}  // namespace

bool cse(ir::Graph& graph, const CseOptions& options) {
  std::vector<bool> is_output(static_cast<std::size_t>(graph.size()), false);
  for (ir::ValueId out : graph.outputs()) is_output[static_cast<std::size_t>(out)] = true;

  GraphRewriter rw(graph);
  std::unordered_map<std::uint64_t, std::vector<ir::ValueId>> seen;  // hash -> new ids
  bool merged = false;
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& old = graph.node(id);
    if (old.op == ir::Op::input || old.op == ir::Op::param ||
        (old.op == ir::Op::constant && !options.merge_tensor_constants && old.type.numel() > 1)) {
      rw.copy(id);
      continue;
    }
    ir::Node probe = old;
    for (ir::ValueId& in : probe.inputs) in = rw.map(in);
    const std::uint64_t h = hash_node(probe);
    std::vector<ir::ValueId>& bucket = seen[h];
    if (!is_output[static_cast<std::size_t>(id)]) {
      bool found = false;
      for (ir::ValueId cand : bucket)
        if (same_node(rw.node(cand), probe)) {
          rw.set_map(id, cand);
          found = merged = true;
          break;
        }
      if (found) continue;
    }
    bucket.push_back(rw.copy(id));
  }
  if (!merged) return false;
  graph = rw.finish();
  return true;
}

std::unique_ptr<Pass> cse_pass(CseOptions options) {
  return make_pass("cse", [options](ir::Graph& g, PassContext&) { return cse(g, options); });
}

}  // namespace orion::ir
