#include "ir/type_rules.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace orion::ir {

namespace {

std::string dt(DType t) { return std::string(dtype_name(t)); }

void require_float(const TensorType& t, std::string_view what) {
  if (!is_float(t.dtype))
    throw Error(std::string(what) + " must be a float tensor, not " + t.str());
}

void require_same_dtype(const TensorType& a, const TensorType& b) {
  if (a.dtype != b.dtype)
    throw Error("inputs have different dtypes: " + a.str() + " and " + b.str());
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const std::int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_axis(std::int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Shape reshape_target(const Shape& from, const std::vector<std::int64_t>& to) {
  Shape out(to.begin(), to.end());
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) throw Error("shape " + shape_str(out) + " has more than one -1");
      infer = static_cast<int>(i);
    } else if (out[i] < 0) {
      throw Error("shape " + shape_str(out) + " has a negative dimension");
    } else {
      // The dimensions come from attributes, which may come from untrusted text.
      if (out[i] != 0 && known > std::numeric_limits<std::int64_t>::max() / out[i])
        throw Error("shape " + shape_str(out) + " has too many elements");
      known *= out[i];
    }
  }
  const std::int64_t n = shape_numel(from);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      throw Error("cannot reshape " + shape_str(from) + " to " + shape_str(out));
    out[static_cast<std::size_t>(infer)] = n / known;
  }
  if (shape_numel(out) != n)
    throw Error("cannot reshape " + shape_str(from) + " (" + std::to_string(n) +
                " elements) to " + shape_str(out));
  return out;
}

std::vector<int> reduce_axes(const Node& n, int rank) {
  const auto& axes = n.attr_ints("axes");
  if (axes.empty()) throw Error("axes must name at least one axis");
  std::vector<int> out;
  for (std::int64_t a : axes) out.push_back(normalize_axis(a, rank));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw Error("axes name the same axis twice");
  return out;
}

namespace rules {

TensorType binary(std::span<const TensorType> in, const Node&) {
  require_float(in[0], "x");
  require_same_dtype(in[0], in[1]);
  return {in[0].dtype, broadcast_shapes(in[0].shape, in[1].shape)};
}

TensorType unary(std::span<const TensorType> in, const Node&) {
  require_float(in[0], "x");
  return in[0];
}

TensorType matmul(std::span<const TensorType> in, const Node& n) {
  const TensorType& a = in[0];
  const TensorType& b = in[1];
  require_float(a, "x");
  require_same_dtype(a, b);
  if (a.rank() < 2 || b.rank() < 2)
    throw Error("both inputs need rank >= 2: " + a.str() + " and " + b.str());
  const bool tx = n.attr_bool("transpose_x");
  const bool ty = n.attr_bool("transpose_y");
  const std::size_t ra = a.shape.size(), rb = b.shape.size();
  const std::int64_t m = tx ? a.shape[ra - 1] : a.shape[ra - 2];
  const std::int64_t ka = tx ? a.shape[ra - 2] : a.shape[ra - 1];
  const std::int64_t kb = ty ? b.shape[rb - 1] : b.shape[rb - 2];
  const std::int64_t nn = ty ? b.shape[rb - 2] : b.shape[rb - 1];
  if (ka != kb)
    throw Error("inner dimensions differ: " + a.str() + (tx ? "^T" : "") + " x " + b.str() +
                (ty ? "^T" : "") + " (" + std::to_string(ka) + " vs " + std::to_string(kb) + ")");
  Shape batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2),
                                 Shape(b.shape.begin(), b.shape.end() - 2));
  batch.push_back(m);
  batch.push_back(nn);
  return {a.dtype, batch};
}

TensorType conv(std::span<const TensorType> in, const Node& n) {
  const TensorType& x = in[0];
  const TensorType& w = in[1];
  require_float(x, "x");
  require_same_dtype(x, w);
  if (x.rank() != 4 || w.rank() != 4)
    throw Error("x and weight must have rank 4 (x [N, Cin, H, W], weight [Cout, Cin/groups, kh, kw]): " +
                x.str() + " and " + w.str());
  const auto& strides = n.attr_ints("strides");
  const auto& pads = n.attr_ints("pads");
  const auto& dilations = n.attr_ints("dilations");
  const std::int64_t groups = n.attr_int("groups");
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    throw Error("strides and dilations need 2 entries, pads 4 (top, bottom, left, right)");
  // Bounds keep the output-size arithmetic below far from overflow, whatever the text says.
  constexpr std::int64_t kMaxParam = std::int64_t{1} << 20;
  for (std::int64_t v : strides)
    if (v < 1 || v > kMaxParam) throw Error("strides must be in [1, 2^20]");
  for (std::int64_t v : dilations)
    if (v < 1 || v > kMaxParam) throw Error("dilations must be in [1, 2^20]");
  for (std::int64_t v : pads)
    if (v < 0 || v > kMaxParam) throw Error("pads must be in [0, 2^20]");
  const std::int64_t cin = x.shape[1], cout = w.shape[0];
  if (groups < 1 || cin % groups != 0 || cout % groups != 0)
    throw Error("groups " + std::to_string(groups) + " must divide both " + std::to_string(cin) +
                " input and " + std::to_string(cout) + " output channels");
  if (w.shape[1] != cin / groups)
    throw Error("weight " + w.str() + " must have " + std::to_string(cin / groups) +
                " input channels per group (x " + x.str() + ", groups " + std::to_string(groups) + ")");
  Shape out = {x.shape[0], cout, 0, 0};
  for (std::size_t d = 0; d < 2; ++d) {
    const std::int64_t k = w.shape[2 + d];
    if (k < 1 || k > kMaxParam) throw Error("weight " + w.str() + ": kernel sizes must be in [1, 2^20]");
    const std::int64_t padded = x.shape[2 + d] + pads[2 * d] + pads[2 * d + 1];
    const std::int64_t extent = dilations[d] * (k - 1) + 1;
    if (extent > padded)
      throw Error("the dilated kernel (" + std::to_string(extent) + ") is larger than the padded input (" +
                  std::to_string(padded) + ") along axis " + std::to_string(2 + d));
    out[2 + d] = (padded - extent) / strides[d] + 1;
  }
  return {x.dtype, out};
}

TensorType softmax(std::span<const TensorType> in, const Node& n) {
  require_float(in[0], "x");
  if (in[0].rank() == 0) throw Error("x must have rank >= 1");
  normalize_axis(n.attr_int("axis"), in[0].rank());
  return in[0];
}

static void check_channel_param(const TensorType& x, const TensorType& p, std::string_view what) {
  if (p.dtype != x.dtype || p.shape != Shape{x.shape.back()})
    throw Error(std::string(what) + " must be " + dt(x.dtype) + "[" + std::to_string(x.shape.back()) +
                "] to match x " + x.str() + ", not " + p.str());
}

TensorType layer_norm(std::span<const TensorType> in, const Node& n) {
  require_float(in[0], "x");
  if (in[0].rank() == 0) throw Error("x must have rank >= 1");
  check_channel_param(in[0], in[1], "gamma");
  check_channel_param(in[0], in[2], "beta");
  if (!(n.attr_real("epsilon") >= 0)) throw Error("epsilon must be >= 0");
  return in[0];
}

TensorType rms_norm(std::span<const TensorType> in, const Node& n) {
  require_float(in[0], "x");
  if (in[0].rank() == 0) throw Error("x must have rank >= 1");
  check_channel_param(in[0], in[1], "weight");
  if (!(n.attr_real("epsilon") >= 0)) throw Error("epsilon must be >= 0");
  return in[0];
}

TensorType reduce(std::span<const TensorType> in, const Node& n) {
  const TensorType& x = in[0];
  require_float(x, "x");
  const std::vector<int> axes = reduce_axes(n, x.rank());
  const bool keep = n.attr_bool("keep_dims");
  Shape out;
  for (int d = 0; d < x.rank(); ++d) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (!reduced) out.push_back(x.shape[static_cast<std::size_t>(d)]);
    else if (keep) out.push_back(1);
  }
  return {x.dtype, out};
}

TensorType reshape(std::span<const TensorType> in, const Node& n) {
  return {in[0].dtype, reshape_target(in[0].shape, n.attr_ints("shape"))};
}

TensorType transpose(std::span<const TensorType> in, const Node& n) {
  const auto& perm = n.attr_ints("perm");
  const TensorType& x = in[0];
  if (static_cast<int>(perm.size()) != x.rank())
    throw Error("perm has " + std::to_string(perm.size()) + " entries for rank " +
                std::to_string(x.rank()));
  std::vector<bool> seen(perm.size(), false);
  Shape out;
  for (std::int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[static_cast<std::size_t>(p)])
      throw Error("perm " + shape_str(Shape(perm.begin(), perm.end())) + " is not a permutation");
    seen[static_cast<std::size_t>(p)] = true;
    out.push_back(x.shape[static_cast<std::size_t>(p)]);
  }
  return {x.dtype, out};
}

TensorType slice(std::span<const TensorType> in, const Node& n) {
  const TensorType& x = in[0];
  const auto& begin = n.attr_ints("begin");
  const auto& end = n.attr_ints("end");
  if (static_cast<int>(begin.size()) != x.rank() || static_cast<int>(end.size()) != x.rank())
    throw Error("begin and end need one entry per axis of " + x.str());
  Shape out;
  for (std::size_t d = 0; d < begin.size(); ++d) {
    if (begin[d] < 0 || begin[d] > end[d] || end[d] > x.shape[d])
      throw Error("range [" + std::to_string(begin[d]) + ", " + std::to_string(end[d]) +
                  ") of axis " + std::to_string(d) + " is outside " + x.str());
    out.push_back(end[d] - begin[d]);
  }
  return {x.dtype, out};
}

TensorType concat(std::span<const TensorType> in, const Node& n) {
  const TensorType& first = in[0];
  if (first.rank() == 0) throw Error("cannot concatenate scalars");
  const int axis = normalize_axis(n.attr_int("axis"), first.rank());
  Shape out = first.shape;
  for (std::size_t i = 1; i < in.size(); ++i) {
    const TensorType& t = in[i];
    if (t.dtype != first.dtype || t.rank() != first.rank())
      throw Error("input " + std::to_string(i) + " " + t.str() + " does not match " + first.str());
    for (int d = 0; d < t.rank(); ++d)
      if (d != axis && t.shape[static_cast<std::size_t>(d)] != first.shape[static_cast<std::size_t>(d)])
        throw Error("input " + std::to_string(i) + " " + t.str() + " differs from " + first.str() +
                    " outside axis " + std::to_string(axis));
    out[static_cast<std::size_t>(axis)] += t.shape[static_cast<std::size_t>(axis)];
  }
  return {first.dtype, out};
}

TensorType gather(std::span<const TensorType> in, const Node& n) {
  const TensorType& table = in[0];
  const TensorType& idx = in[1];
  if (table.rank() == 0) throw Error("the table must have rank >= 1");
  if (idx.dtype != DType::i32) throw Error("indices must be i32, not " + idx.str());
  const auto axis = static_cast<std::size_t>(normalize_axis(n.attr_int("axis"), table.rank()));
  Shape out(table.shape.begin(), table.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), table.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, table.shape.end());
  return {table.dtype, out};
}

TensorType scatter_add(std::span<const TensorType> in, const Node& n) {
  const TensorType& upd = in[0];
  const TensorType& idx = in[1];
  require_float(upd, "updates");
  if (idx.dtype != DType::i32) throw Error("indices must be i32, not " + idx.str());
  const int out_rank = upd.rank() - idx.rank() + 1;
  if (out_rank < 1)
    throw Error("updates " + upd.str() + " have fewer axes than indices " + idx.str());
  const auto axis = static_cast<std::size_t>(normalize_axis(n.attr_int("axis"), out_rank));
  const std::int64_t size = n.attr_int("size");
  if (size < 0) throw Error("size must be >= 0, not " + std::to_string(size));
  for (std::size_t d = 0; d < idx.shape.size(); ++d)
    if (upd.shape[axis + d] != idx.shape[d])
      throw Error("updates " + upd.str() + " do not hold indices " + idx.str() + " at axis " +
                  std::to_string(axis));
  Shape out(upd.shape.begin(), upd.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.push_back(size);
  out.insert(out.end(), upd.shape.begin() + static_cast<std::ptrdiff_t>(axis + idx.shape.size()), upd.shape.end());
  return {upd.dtype, out};
}

TensorType broadcast_to(std::span<const TensorType> in, const Node& n) {
  const auto& to = n.attr_ints("shape");
  const Shape target(to.begin(), to.end());
  for (std::int64_t d : target)
    if (d < 0) throw Error("shape " + shape_str(target) + " has a negative dimension");
  if (in[0].rank() > static_cast<int>(target.size()) || broadcast_shapes(in[0].shape, target) != target)
    throw Error(in[0].str() + " does not broadcast to " + shape_str(target));
  return {in[0].dtype, target};
}

// logits [..., V] and targets [...] (i32 class indices) -> one loss per row [...].
static void check_loss_operands(const TensorType& logits, const TensorType& targets) {
  require_float(logits, "logits");
  if (logits.rank() == 0) throw Error("logits must have rank >= 1");
  if (targets.dtype != DType::i32) throw Error("targets must be i32, not " + targets.str());
  if (targets.shape != Shape(logits.shape.begin(), logits.shape.end() - 1))
    throw Error("targets " + targets.str() + " must have the shape of logits " + logits.str() +
                " without its last axis");
}

TensorType softmax_cross_entropy(std::span<const TensorType> in, const Node&) {
  check_loss_operands(in[0], in[1]);
  return {in[0].dtype, in[1].shape};
}

TensorType softmax_cross_entropy_grad(std::span<const TensorType> in, const Node&) {
  check_loss_operands(in[0], in[1]);
  if (in[2].dtype != in[0].dtype || in[2].shape != in[1].shape)
    throw Error("dloss must be " + dt(in[0].dtype) + shape_str(in[1].shape) + ", not " + in[2].str());
  return in[0];
}

TensorType cast(std::span<const TensorType> in, const Node& n) {
  return {n.attr<DType>("dtype"), in[0].shape};
}

TensorType clamp(std::span<const TensorType> in, const Node& n) {
  require_float(in[0], "x");
  if (!(n.attr_real("min") <= n.attr_real("max"))) throw Error("min must be <= max");
  return in[0];
}

namespace {
// A scale or zero point of (de)quantization: a scalar, or one value per block of `data`.
void check_blockwise(const TensorType& data, const TensorType& t, std::string_view what) {
  if (t.shape.empty() || t.numel() == 1) return;
  if (t.shape.size() != data.shape.size())
    throw Error(std::string(what) + " " + t.str() + " must be a scalar or have the rank of " + data.str());
  for (std::size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] <= 0 || data.shape[i] % t.shape[i] != 0)
      throw Error(std::string(what) + " " + t.str() + ": dimension " + std::to_string(i) + " does not divide " +
                  data.str() + "'s");
}
}  // namespace

TensorType dequantize(std::span<const TensorType> in, const Node& n) {
  if (in[0].dtype != DType::i8 && in[0].dtype != DType::u8) throw Error("data must be i8 or u8, not " + in[0].str());
  const std::int64_t bits = n.attr_int("bits");
  if (bits != 8 && bits != 4) throw Error("bits must be 8 or 4, not " + std::to_string(bits));
  require_float(in[1], "scale");
  check_blockwise(in[0], in[1], "scale");
  if (in.size() > 2) check_blockwise(in[0], in[2], "zero_point");
  return {in[1].dtype, in[0].shape};
}

TensorType dequantize_affine(std::span<const TensorType> in, const Node& n) {
  const TensorType &data = in[0], &scale = in[1], &bias = in[2];
  const std::int64_t bits = n.attr_int("bits");
  if (bits < 2 || bits > 8 || bits == 7) throw Error("bits must be 2, 3, 4, 5, 6 or 8, not " + std::to_string(bits));
  if (data.dtype != DType::u8 || data.rank() == 0) throw Error("data must be u8 of rank >= 1, not " + data.str());
  require_float(scale, "scale");
  if (bias.dtype != scale.dtype || bias.shape != scale.shape)
    throw Error("bias " + bias.str() + " must have scale's type " + scale.str());
  const std::int64_t bytes = data.shape.back();
  // A row is whole uint32 words of a whole number of values.
  if (bytes % 4 != 0 || (bytes * 8) % bits != 0)
    throw Error("data " + data.str() + ": a row of " + std::to_string(bytes) + " bytes is not whole words of " +
                std::to_string(bits) + "-bit values");
  const std::int64_t cols = bytes * 8 / bits;
  const bool leading = scale.rank() == data.rank() &&
                       std::equal(data.shape.begin(), data.shape.end() - 1, scale.shape.begin());
  const std::int64_t groups = leading ? scale.shape.back() : 0;
  if (groups <= 0 || cols % groups != 0 || (cols / groups != 32 && cols / groups != 64 && cols / groups != 128))
    throw Error("scale " + scale.str() + " must be data's leading dims and " + std::to_string(cols) +
                " / (32, 64 or 128) groups");
  Shape out = data.shape;
  out.back() = cols;
  return {scale.dtype, out};
}

TensorType quantize(std::span<const TensorType> in, const Node& n) {
  require_float(in[0], "x");
  require_float(in[1], "scale");
  const DType to = n.attr<DType>("dtype");
  if (to != DType::i8 && to != DType::u8) throw Error("dtype must be i8 or u8, not " + std::string(dtype_name(to)));
  check_blockwise(in[0], in[1], "scale");
  if (in.size() > 2) check_blockwise(in[0], in[2], "zero_point");
  return {to, in[0].shape};
}

TensorType where(std::span<const TensorType> in, const Node&) {
  if (in[0].dtype != DType::boolean) throw Error("cond must be bool, not " + in[0].str());
  require_same_dtype(in[1], in[2]);
  return {in[1].dtype, broadcast_shapes(in[0].shape, broadcast_shapes(in[1].shape, in[2].shape))};
}

}  // namespace rules
}  // namespace orion::ir
