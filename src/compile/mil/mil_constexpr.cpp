#include "compile/mil/mil_constexpr.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace orion::compile {

namespace {

int log2_exact(std::int64_t v) {
  int b = 0;
  while ((std::int64_t{1} << b) < v) ++b;
  return (std::int64_t{1} << b) == v ? b : -1;
}

bool all_consts(const ir::Graph& g, const ir::Node& n) {
  for (ir::ValueId in : n.inputs)
    if (g.node(in).op != ir::Op::constant) return false;
  return true;
}

}  // namespace

bool is_lut_palette_size(std::int64_t entries, bool ios16) {
  const int b = log2_exact(entries);
  return b == 1 || b == 2 || b == 4 || b == 6 || b == 8 || (b == 3 && !ios16);
}

std::optional<LutForm> lut_form(const ir::Graph& g, ir::ValueId id) {
  const ir::Node& n = g.node(id);
  if (n.op != ir::Op::gather || n.inputs.size() != 2 || n.attr_int("axis") != 0) return std::nullopt;
  const ir::Node& flat = g.node(n.inputs[0]);
  const ir::Node& idx = g.node(n.inputs[1]);
  if (flat.op != ir::Op::reshape || idx.op != ir::Op::constant || idx.type.dtype != DType::i32 || idx.type.rank() < 1)
    return std::nullopt;
  const ir::Node& lut = g.node(flat.inputs[0]);
  if (lut.op != ir::Op::constant || !is_float(lut.type.dtype) || flat.type.rank() != 1) return std::nullopt;
  LutForm f{id, n.inputs[0], flat.inputs[0], n.inputs[1], {}, 0, 0, false};
  const Shape& ls = lut.type.shape;
  const Shape& dims = idx.type.shape;
  if (ls.size() == 1) {
    f.ios16 = true;
    f.entries = ls[0];
  } else {
    if (ls.size() != dims.size() + 2 || ls.back() != 1) return std::nullopt;
    f.entries = ls[ls.size() - 2];
    f.tables.assign(ls.begin(), ls.end() - 2);
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (f.tables[d] <= 0 || dims[d] % f.tables[d] != 0) return std::nullopt;
  }
  if (!is_lut_palette_size(f.entries, f.ios16)) return std::nullopt;
  f.bits = log2_exact(f.entries);
  return f;
}

std::vector<std::int64_t> lut_table_of_elements(const Shape& dims, const Shape& tables) {
  const std::int64_t n = shape_numel(dims);
  std::vector<std::int64_t> out(static_cast<std::size_t>(n), 0);
  if (tables.empty() || n == 0) return out;
  // Tables along the first axis alone (a LUT per group of output channels): runs of n / T0.
  if (std::all_of(tables.begin() + 1, tables.end(), [](std::int64_t t) { return t == 1; })) {
    const std::int64_t run = n / tables[0];
    for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = i / run;
    return out;
  }
  // Per axis, what each coordinate adds to the table's row-major index; then the elements in
  // row-major order, their coordinates counted like an odometer.
  const std::size_t rank = dims.size();
  std::vector<std::vector<std::int64_t>> add(rank);
  std::int64_t stride = 1;
  for (std::size_t d = rank; d-- > 0;) {
    add[d].resize(static_cast<std::size_t>(dims[d]));
    for (std::int64_t c = 0; c < dims[d]; ++c) add[d][static_cast<std::size_t>(c)] = c / (dims[d] / tables[d]) * stride;
    stride *= tables[d];
  }
  std::vector<std::int64_t> coord(rank, 0);
  std::int64_t table = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    out[static_cast<std::size_t>(i)] = table;
    for (std::size_t d = rank; d-- > 0;) {
      table -= add[d][static_cast<std::size_t>(coord[d])];
      if (++coord[d] < dims[d]) {
        table += add[d][static_cast<std::size_t>(coord[d])];
        break;
      }
      coord[d] = 0;
      table += add[d][0];
    }
  }
  return out;
}

std::vector<std::int32_t> lut_codes(const ir::Graph& g, const LutForm& f) {
  const Tensor idx = g.node(f.indices).attr<Tensor>("value").contiguous();
  const std::vector<std::int64_t> table = lut_table_of_elements(idx.shape(), f.tables);
  std::vector<std::int32_t> codes(table.size());
  const std::int32_t* v = idx.data<std::int32_t>();
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const std::int64_t lo = table[i] * f.entries;
    if (v[i] < lo || v[i] >= lo + f.entries)
      throw Error(ir::describe(g.node(f.gather)) + " (constexpr_lut_to_dense): index " + std::to_string(v[i]) +
                  " of element " + std::to_string(i) + " is outside its LUT's entries [" + std::to_string(lo) + ", " +
                  std::to_string(lo + f.entries) + ")");
    codes[i] = static_cast<std::int32_t>(v[i] - lo);
  }
  return codes;
}

Tensor lut_flat_indices(const Shape& dims, const Shape& tables, std::int64_t entries, std::span<const std::int32_t> codes) {
  if (!tables.empty()) {
    if (tables.size() != dims.size()) throw Error("LUT: " + shape_str(tables) + " tables for weights of " + shape_str(dims));
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (tables[d] <= 0 || dims[d] % tables[d] != 0)
        throw Error("LUT: " + std::to_string(tables[d]) + " tables along axis " + std::to_string(d) +
                    " do not divide the weight's " + std::to_string(dims[d]));
  }
  const std::vector<std::int64_t> table = lut_table_of_elements(dims, tables);
  if (codes.size() != table.size())
    throw Error("LUT: " + std::to_string(codes.size()) + " codes for weights of " + shape_str(dims));
  Tensor out(DType::i32, dims);
  std::int32_t* flat = out.data<std::int32_t>();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (codes[i] < 0 || codes[i] >= entries)
      throw Error("LUT: code " + std::to_string(codes[i]) + " of element " + std::to_string(i) + " is outside [0, " +
                  std::to_string(entries) + ")");
    flat[i] = static_cast<std::int32_t>(table[i] * entries + codes[i]);
  }
  return out;
}

bool is_constant_dequantize(const ir::Graph& g, ir::ValueId id) {
  const ir::Node& n = g.node(id);
  return n.op == ir::Op::dequantize && all_consts(g, n);
}

bool is_constexpr_weight(const ir::Graph& g, ir::ValueId id) {
  return g.node(id).op == ir::Op::constant || is_constant_dequantize(g, id) || lut_form(g, id).has_value();
}

}  // namespace orion::compile
