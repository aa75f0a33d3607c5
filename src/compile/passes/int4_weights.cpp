#include "compile/passes/int4_weights.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/half.h"

namespace orion::compile {

namespace {

float round_fp16(float v) { return half_to_float(float_to_half(v)); }

[[noreturn]] void fail_int4(std::string_view name, const std::string& problem) {
  throw Error("4-bit weight " + std::string(name) + ": " + problem);
}

void require_matrix(const Tensor& t, std::string_view name, const char* what) {
  if (t.rank() != 2) fail_int4(name, std::string(what) + " " + std::string(dtype_name(t.dtype())) + shape_str(t.shape()) + " is not [O, C]");
}

}  // namespace

Int4Weight quantize_int4(const Tensor& w, std::int64_t block, Int4Mode mode, std::string_view name) {
  require_matrix(w, name, "the weight");
  const std::int64_t rows = w.shape()[0], cols = w.shape()[1];
  const std::int64_t b = block == 0 ? cols : block;
  if (b <= 0 || cols % b != 0)
    fail_int4(name, "blocks of " + std::to_string(b) + " input channels do not divide its " + std::to_string(cols));
  const Tensor f = w.to(DType::f32).contiguous();
  const float* x = f.data<float>();
  const bool affine = mode == Int4Mode::affine;
  const std::int64_t nb = cols / b;
  Int4Weight out{Tensor(affine ? DType::u8 : DType::i8, {rows, cols}), Tensor(DType::f16, {rows, nb}), std::nullopt};
  if (affine) out.offset = Tensor(DType::u8, {rows, nb});
  void* values = out.values.raw();
  std::uint16_t* scales = out.scale.data<std::uint16_t>();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < nb; ++k) {
      const float* v = x + r * cols + k * b;
      float lo = 0, hi = 0, absmax = 0;  // the range holds 0
      for (std::int64_t j = 0; j < b; ++j) {
        if (!std::isfinite(v[j])) fail_int4(name, "weight [" + std::to_string(r) + ", " + std::to_string(k * b + j) + "] is not finite");
        lo = std::min(lo, v[j]);
        hi = std::max(hi, v[j]);
        absmax = std::max(absmax, std::fabs(v[j]));
      }
      // A block of small integers (a selection's 0 and 1, a rotation's +-1) is exact with scale 1.
      bool integers = true;
      for (std::int64_t j = 0; j < b && integers; ++j) integers = v[j] == std::nearbyint(v[j]);
      const bool exact = integers && (affine ? hi - lo <= 15.0f : absmax <= 7.0f);
      const float s = exact && hi > lo ? 1.0f : round_fp16(affine ? (hi - lo) / 15.0f : absmax / 7.0f);
      scales[r * nb + k] = float_to_half(s);
      const float z = affine && s > 0 ? std::clamp(std::nearbyint(-lo / s), 0.0f, 15.0f) : 0.0f;
      if (affine) out.offset->data<std::uint8_t>()[r * nb + k] = static_cast<std::uint8_t>(z);
      for (std::int64_t j = 0; j < b; ++j) {
        const float q = s > 0 ? std::nearbyint(v[j] / s) + z : z;
        const std::int64_t at = r * cols + k * b + j;
        if (affine) static_cast<std::uint8_t*>(values)[at] = static_cast<std::uint8_t>(std::clamp(q, 0.0f, 15.0f));
        else static_cast<std::int8_t*>(values)[at] = static_cast<std::int8_t>(std::clamp(q, -8.0f, 7.0f));
      }
    }
  return out;
}

Int4Weight int4_weight(Tensor values, Tensor scale, std::optional<Tensor> offset, std::string_view name) {
  require_matrix(values, name, "the values");
  require_matrix(scale, name, "the scale");
  if (values.dtype() != DType::i8 && values.dtype() != DType::u8)
    fail_int4(name, "values of " + std::string(dtype_name(values.dtype())) + "; int4 values are i8, uint4 values u8");
  const Shape& vs = values.shape();
  const Shape& ss = scale.shape();
  if (ss[0] != vs[0] || ss[1] <= 0 || vs[1] % ss[1] != 0)
    fail_int4(name, "scale " + shape_str(ss) + " for values " + shape_str(vs) +
                   ": one scale per block of input channels of each output channel, the blocks dividing " +
                   std::to_string(vs[1]));
  values = values.contiguous();
  const bool is_signed = values.dtype() == DType::i8;
  const std::int64_t lo = is_signed ? -8 : 0, hi = is_signed ? 7 : 15;
  for (std::int64_t i = 0; i < values.numel(); ++i) {
    const std::int64_t v = is_signed ? values.data<std::int8_t>()[i] : values.data<std::uint8_t>()[i];
    if (v < lo || v > hi)
      fail_int4(name, std::string(is_signed ? "int4" : "uint4") + " value " + std::to_string(v) + " at element " + std::to_string(i) +
                     " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  scale = scale.to(DType::f16).contiguous();
  for (std::int64_t i = 0; i < scale.numel(); ++i)
    if (!std::isfinite(half_to_float(scale.data<std::uint16_t>()[i])))
      fail_int4(name, "scale " + std::to_string(i) + " is not a finite fp16 value");
  if (offset) {
    require_matrix(*offset, name, "the offset");
    if (offset->shape() != ss) fail_int4(name, "offset " + shape_str(offset->shape()) + " is not the scale's " + shape_str(ss));
    if (is_float(offset->dtype())) {
      offset = offset->to(DType::f16).contiguous();
    } else if (offset->dtype() != values.dtype()) {
      fail_int4(name, "an integer offset has the values' type (" + std::string(dtype_name(values.dtype())) + "), not " +
                     std::string(dtype_name(offset->dtype())));
    } else {
      offset = offset->contiguous();
      for (std::int64_t i = 0; i < offset->numel(); ++i) {
        const std::int64_t v = is_signed ? offset->data<std::int8_t>()[i] : offset->data<std::uint8_t>()[i];
        if (v < lo || v > hi) fail_int4(name, "offset " + std::to_string(v) + " at element " + std::to_string(i) + " is outside the values' range");
      }
    }
  }
  return {std::move(values), std::move(scale), std::move(offset)};
}

ir::ValueId add_int4_weight(ir::GraphRewriter& rw, const Int4Weight& w, const Shape& shape, std::string_view name) {
  const std::string n(name);
  const Shape& vs = w.values.shape();
  if (shape.size() < 2 || shape[0] != vs[0] || shape_numel(shape) != w.values.numel())
    fail_int4(name, "values " + shape_str(vs) + " do not make a weight of " + shape_str(shape));
  // The scale and offset keep one value per block along axis 1 and have the weight's rank.
  Shape bs(shape.size(), 1);
  bs[0] = vs[0];
  bs[1] = w.scale.shape()[1];
  std::vector<ir::ValueId> in{rw.constant(w.values.reshape(shape), n + "_data"), rw.constant(w.scale.reshape(bs), n + "_scale")};
  if (w.offset) in.push_back(rw.constant(w.offset->reshape(bs), n + "_offset"));
  return rw.op(ir::Op::dequantize, std::move(in), {{"bits", std::int64_t{4}}}, n);
}

}  // namespace orion::compile
