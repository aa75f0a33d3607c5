#include "model/formats/stored_weights.h"

#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/half.h"
#include "exec/cpu/quantize.h"

namespace orion::model {

namespace {

// [in, out] <-> [out, in] of a contiguous f32 matrix, in tiles (a strided copy of GPT-2's
// matrices element by element takes seconds).
Tensor transpose_f32(const Tensor& m) {
  const std::int64_t R = m.dim(0), C = m.dim(1);
  Tensor out(DType::f32, {C, R});
  const float* in = m.data<float>();
  float* o = out.data<float>();
  for (std::int64_t r0 = 0; r0 < R; r0 += 64)
    for (std::int64_t c0 = 0; c0 < C; c0 += 64)
      for (std::int64_t c = c0; c < std::min(c0 + 64, C); ++c)
        for (std::int64_t r = r0; r < std::min(r0 + 64, R); ++r) o[c * R + r] = in[r * C + c];
  return out;
}

}  // namespace

std::string stored_format_name(const StoredFormat& f) {
  std::string s(weight_dtype_name(f.dtype));
  if (f.dtype == WeightDType::q8) {
    s += "/" + std::to_string(f.q8_block);
    if (f.q8_scale != DType::f32) s += " (" + std::string(dtype_name(f.q8_scale)) + " scales)";
  }
  return s;
}

bool gpt2_is_conv1d(std::string_view name) {
  return name.starts_with("h.") && (name.ends_with(".attn.c_attn.weight") || name.ends_with(".attn.c_proj.weight") ||
                                    name.ends_with(".mlp.c_fc.weight") || name.ends_with(".mlp.c_proj.weight"));
}

bool gpt2_is_linear(std::string_view name) { return name == "wte.weight" || gpt2_is_conv1d(name); }

std::optional<StoredFormat> read_stored_format(const SafetensorsFile& file) {
  const auto& md = file.metadata();
  bool any = false;
  for (const auto& [key, value] : md) {
    if (!key.starts_with("orion.")) continue;
    any = true;
    if (key != kLayoutKey && key != kDTypeKey && key != kQ8BlockKey)
      throw Error::in_file(file.path(), "__metadata__ key " + in_quotes(key) +
                                            " is not one this version of orion knows (orion.layout, "
                                            "orion.dtype, orion.q8_block): written by a newer orion?");
  }
  if (!any) return std::nullopt;
  auto get = [&](std::string_view key) -> const std::string& {
    const auto it = md.find(std::string(key));
    if (it == md.end())
      throw Error::in_file(file.path(), "__metadata__ has orion. keys but no " + in_quotes(key));
    return it->second;
  };
  if (get(kLayoutKey) != kLayoutOutIn)
    throw Error::in_file(file.path(), "__metadata__ orion.layout " + in_quotes(get(kLayoutKey)) +
                                          " is unknown (this version reads 'out_in')");
  StoredFormat f;
  const std::string& dtype = get(kDTypeKey);
  if (dtype != "f32" && dtype != "f16" && dtype != "q8")
    throw Error::in_file(file.path(), "__metadata__ orion.dtype " + in_quotes(dtype) + " is unknown (f32, f16 or q8)");
  f.dtype = weight_dtype_from_name(dtype);
  if (f.dtype == WeightDType::q8) {
    const std::string& b = get(kQ8BlockKey);
    int block = 0;
    const auto [end, ec] = std::from_chars(b.data(), b.data() + b.size(), block);
    if (ec != std::errc() || end != b.data() + b.size() || (block != 32 && block != 64))
      throw Error::in_file(file.path(), "__metadata__ orion.q8_block " + in_quotes(b) + " is not 32 or 64");
    f.q8_block = block;
  } else if (md.contains(std::string(kQ8BlockKey))) {
    throw Error::in_file(file.path(), "__metadata__ has orion.q8_block but orion.dtype is " + dtype);
  }
  return f;
}

std::map<std::string, std::string> stored_format_metadata(const StoredFormat& f) {
  std::map<std::string, std::string> md{{"format", "pt"},
                                        {std::string(kLayoutKey), std::string(kLayoutOutIn)},
                                        {std::string(kDTypeKey), std::string(weight_dtype_name(f.dtype))}};
  if (f.dtype == WeightDType::q8) md.emplace(kQ8BlockKey, std::to_string(f.q8_block));
  return md;
}

StoredWeights StoredWeights::open(const SafetensorsFile& file, const StoredFormat& format,
                                  const std::vector<std::pair<std::string, Shape>>& params) {
  StoredWeights s;
  s.path_ = file.path();
  s.format_ = format;
  const std::string& path = file.path();
  std::map<std::string_view, bool> used;
  // The entry `name`, which must have one of `dtypes` and `shape`; `why` says where the shape
  // comes from.
  auto entry = [&](const std::string& name, std::initializer_list<DType> dtypes, const Shape& shape,
                   const std::string& why) -> const SafetensorsEntry& {
    const SafetensorsEntry* e = file.find(name);
    if (!e)
      throw Error::in_file(path, "tensor " + name + " is missing (a " + stored_format_name(format) +
                                     " file written by orion convert has it)");
    bool ok = false;
    std::string names;
    for (DType d : dtypes) {
      ok |= e->dtype == d;
      names += (names.empty() ? "" : " or ") + std::string(safetensors_dtype_name(d));
    }
    if (!ok)
      throw Error::in_file(path, "tensor " + name + " has dtype " + std::string(safetensors_dtype_name(e->dtype)) +
                                     ", a " + stored_format_name(format) + " file stores it as " + names);
    if (e->shape != shape)
      throw Error::in_file(path, "tensor " + name + " has shape " + shape_str(e->shape) + ", " + why + " " +
                                     shape_str(shape));
    used[e->name] = true;
    return *e;
  };
  for (const auto& [name, graph_shape] : params) {
    if (!gpt2_is_linear(name)) {
      entry(name, {DType::f32, DType::f16, DType::bf16}, graph_shape, "config.json needs");
      s.vectors_.emplace(name, file.tensor_as(name, DType::f32));
      continue;
    }
    // Stored [out, in]: the graphs hold Conv1D weights [in, out].
    const Shape rows = gpt2_is_conv1d(name) ? Shape{graph_shape[1], graph_shape[0]} : graph_shape;
    const std::string why = "config.json needs (as [out, in])";
    StoredMatrix m;
    switch (format.dtype) {
      case WeightDType::f32: entry(name, {DType::f32}, rows, why); m.w = file.tensor(name); break;
      case WeightDType::f16: entry(name, {DType::f16}, rows, why); m.w = file.tensor(name); break;
      case WeightDType::q4: throw Error::in_file(path, "q4 is MLX's layout (mlx_quantization.h), not orion convert's");
      case WeightDType::q8: {
        const std::string qn = name + std::string(kQ8Suffix), sn = name + std::string(kQ8ScaleSuffix);
        if (rows[1] % format.q8_block != 0)
          throw Error::in_file(path, "tensor " + qn + ": rows of " + std::to_string(rows[1]) +
                                         " weights are not a whole number of orion.q8_block " +
                                         std::to_string(format.q8_block) + " blocks");
        entry(qn, {DType::i8}, rows, why);
        const SafetensorsEntry& se = entry(sn, {DType::f32, DType::f16}, {rows[0], rows[1] / format.q8_block},
                                           "orion.q8_block " + std::to_string(format.q8_block) + " needs");
        if (s.matrices_.empty() && s.format_.q8_scale != se.dtype) s.format_.q8_scale = se.dtype;
        if (se.dtype != s.format_.q8_scale)
          throw Error::in_file(path, "tensor " + sn + " has dtype " + std::string(safetensors_dtype_name(se.dtype)) +
                                         ", other scales in the file are " +
                                         std::string(safetensors_dtype_name(s.format_.q8_scale)));
        m.w = file.tensor(qn);
        m.scales = file.tensor_as(sn, DType::f32);
        const auto sv = m.scales.span<float>();
        for (std::size_t i = 0; i < sv.size(); ++i)
          if (!(sv[i] >= 0.0f) || std::isinf(sv[i]))
            throw Error::in_file(path, "tensor " + sn + ": scale " + std::to_string(i) + " is " +
                                           std::to_string(sv[i]) + " (scales are finite and not negative)");
        break;
      }
    }
    s.matrices_.emplace(name, std::move(m));
  }
  for (const SafetensorsEntry& e : file.entries())
    if (!used.contains(e.name))
      throw Error::in_file(path, "tensor " + e.name + " is not part of a GPT-2 model with this config stored as " +
                                     stored_format_name(s.format_));
  return s;
}

const StoredMatrix& StoredWeights::matrix(std::string_view name) const {
  const auto it = matrices_.find(name);
  if (it == matrices_.end()) throw Error::in_file(path_, "no matrix " + std::string(name) + " in this model");
  return it->second;
}

const Tensor& StoredWeights::vector(std::string_view name) const {
  const auto it = vectors_.find(name);
  if (it == vectors_.end()) throw Error::in_file(path_, "no tensor " + std::string(name) + " in this model");
  return it->second;
}

Tensor StoredWeights::rows_f32(std::string_view name) const {
  const StoredMatrix& m = matrix(name);
  switch (format_.dtype) {
    case WeightDType::f32: return m.w.clone();
    case WeightDType::f16: return m.w.to(DType::f32);
    case WeightDType::q4: break;  // never stored in this format (open refuses it)
    case WeightDType::q8: {
      Tensor out(DType::f32, m.w.shape());
      exec::cpu::dequantize_q8(m.w.data<std::int8_t>(), m.scales.data<float>(), m.w.dim(0), m.w.dim(1),
                               format_.q8_block, out.data<float>());
      return out;
    }
  }
  return {};
}

TensorMap StoredWeights::graph_weights() const {
  TensorMap b;
  for (const auto& [name, t] : vectors_) b.emplace(name, t);
  for (const auto& [name, m] : matrices_) {
    Tensor rows = rows_f32(name);
    b.emplace(name, gpt2_is_conv1d(name) ? transpose_f32(rows) : std::move(rows));
  }
  return b;
}

std::size_t StoredWeights::bytes() const {
  std::size_t n = 0;
  for (const auto& [name, t] : vectors_) n += t.nbytes();
  for (const auto& [name, m] : matrices_)
    n += m.w.nbytes() + (m.scales.defined() ? m.scales.numel() * dtype_size(format_.q8_scale) : 0);
  return n;
}

}  // namespace orion::model
