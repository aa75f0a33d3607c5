#include "model/formats/mlx_quantization.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/formats/checkpoint.h"

namespace orion::model {

using exec::cpu::AffineFormat;
using nlohmann::json;

namespace {

// One {"group_size": G, "bits": B, "mode": "affine"} object; `where` names it in errors.
AffineFormat read_format(const json& j, const AffineFormat& fallback, const std::string& source, const std::string& where) {
  AffineFormat f = fallback;
  auto field = [&](const char* key, int& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_number_integer())
      throw Error::in_file(source, where + " key \"" + key + "\" is " + it->dump() + ", expected an integer");
    out = static_cast<int>(std::clamp<std::int64_t>(it->get<std::int64_t>(), -1, 1 << 20));
  };
  field("group_size", f.group);
  field("bits", f.bits);
  if (auto m = j.find("mode"); m != j.end() && !m->is_null() && *m != "affine")
    throw Error::in_file(source, where + " mode is " + m->dump() + "; Orion reads MLX's \"affine\" quantization only");
  if (const std::string p = exec::cpu::affine_format_problem(f); !p.empty())
    throw Error::in_file(source, where + ": " + p);
  return f;
}

}  // namespace

std::optional<AffineFormat> MlxQuantization::format_of(std::string_view path) const {
  if (auto it = modules.find(path); it != modules.end()) return it->second;
  return defaults;
}

std::optional<MlxQuantization> read_mlx_quantization(const json& config, const std::string& source) {
  const json* q = nullptr;
  std::string key = "quantization";
  if (auto it = config.find("quantization"); it != config.end() && !it->is_null()) {
    q = &*it;
  } else if (auto c = config.find("quantization_config"); c != config.end() && !c->is_null()) {
    q = &*c;
    key = "quantization_config";
    if (c->is_object())
      if (auto m = c->find("quant_method"); m != c->end())
        throw Error::in_file(source, "key \"quantization_config\" has quant_method " + m->dump() +
                                         "; Orion reads MLX's affine quantization (\"quantization\") and GGUF files");
  }
  if (!q) return std::nullopt;
  if (!q->is_object()) throw Error::in_file(source, "key \"" + key + "\" is " + q->dump() + ", expected an object");
  MlxQuantization out;
  out.defaults = read_format(*q, AffineFormat{.bits = 4, .group = 64}, source, "key \"" + key + "\"");
  for (const auto& [name, value] : q->items()) {
    if (name == "group_size" || name == "bits" || name == "mode") continue;
    const std::string where = "key \"" + key + "\" entry \"" + name + "\"";
    if (value.is_boolean()) {
      out.modules.emplace(name, value.get<bool>() ? std::optional(out.defaults) : std::nullopt);
    } else if (value.is_object()) {
      out.modules.emplace(name, read_format(value, out.defaults, source, where));
    } else {
      throw Error::in_file(source, where + " is " + value.dump() + ", expected an object or a boolean");
    }
  }
  return out;
}

json mlx_quantization_json(const MlxQuantization& q) {
  json j = {{"group_size", q.defaults.group}, {"bits", q.defaults.bits}, {"mode", "affine"}};
  for (const auto& [name, f] : q.modules)
    j[name] = f ? json{{"group_size", f->group}, {"bits", f->bits}, {"mode", "affine"}} : json(false);
  return j;
}

std::string quantized_module_of(std::string_view weight_name) {
  constexpr std::string_view kSuffix = ".weight";
  if (!weight_name.ends_with(kSuffix)) return {};
  return std::string(weight_name.substr(0, weight_name.size() - kSuffix.size()));
}

QuantizedMatrix read_quantized_matrix(const Checkpoint& checkpoint, const std::string& module, const Shape& shape,
                                      AffineFormat f) {
  const std::string wname = module + ".weight";
  if (shape.size() != 2) throw Error::in_file(checkpoint.path(), "tensor " + wname + " is quantized but is not a matrix");
  const std::int64_t rows = shape[0], cols = shape[1];
  if (cols % f.group != 0)
    throw Error::in_file(checkpoint.path(), "tensor " + wname + " is quantized in groups of " + std::to_string(f.group) +
                                                ", which do not divide its rows of " + std::to_string(cols));
  const Shape words_shape{rows, exec::cpu::affine_row_words(cols, f.bits)}, group_shape{rows, cols / f.group};
  auto get = [&](const std::string& name, const Shape& want, bool words) {
    const SafetensorsFile* file = checkpoint.file_of(name);
    if (!file) throw Error::in_file(checkpoint.path(), "tensor " + name + " is missing (" + module + " is quantized)");
    const SafetensorsEntry* e = file->find(name);
    if (words ? e->dtype != DType::u32 : !is_float(e->dtype))
      throw Error::in_file(file->path(), "tensor " + name + " has dtype " + std::string(dtype_name(e->dtype)) + ", expected " +
                                             (words ? "u32 (packed " + std::to_string(f.bits) + "-bit weights)" : "a float type"));
    if (e->shape != want)
      throw Error::in_file(file->path(), "tensor " + name + " has shape " + shape_str(e->shape) + ", " +
                                             exec::cpu::affine_format_name(f) + " of a " + shape_str(shape) +
                                             " matrix needs " + shape_str(want));
    return words ? file->tensor(name) : file->tensor_as(name, DType::f32);
  };
  QuantizedMatrix m;
  m.words = get(wname, words_shape, true);
  m.scales = get(module + ".scales", group_shape, false);
  m.biases = get(module + ".biases", group_shape, false);
  m.format = f;
  return m;
}

Tensor dequantize(const QuantizedMatrix& m) {
  Tensor w(DType::f32, {m.rows(), m.cols()});
  const Tensor words = m.words.contiguous(), scales = m.scales.contiguous(), biases = m.biases.contiguous();
  exec::cpu::dequantize_affine(words.data<std::uint32_t>(), scales.data<float>(), biases.data<float>(), m.rows(), m.cols(),
                               m.format, w.data<float>());
  return w;
}

QuantizedMatrix quantize(const Tensor& w, AffineFormat f) {
  if (w.rank() != 2 || w.dtype() != DType::f32) throw Error("quantize: expected an f32 matrix, got " + shape_str(w.shape()));
  const std::int64_t rows = w.dim(0), cols = w.dim(1);
  if (cols % f.group != 0)
    throw Error("quantize: a row of " + std::to_string(cols) + " weights is not a whole number of groups of " +
                std::to_string(f.group));
  QuantizedMatrix m;
  m.words = Tensor(DType::u32, {rows, exec::cpu::affine_row_words(cols, f.bits)});
  m.scales = Tensor(DType::f32, {rows, cols / f.group});
  m.biases = Tensor(DType::f32, {rows, cols / f.group});
  m.format = f;
  const Tensor src = w.contiguous();
  exec::cpu::quantize_affine(src.data<float>(), rows, cols, f, m.words.data<std::uint32_t>(), m.scales.data<float>(),
                             m.biases.data<float>());
  return m;
}

}  // namespace orion::model
