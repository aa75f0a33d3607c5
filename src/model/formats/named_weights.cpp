#include "model/formats/named_weights.h"

#include <set>

#include "core/error.h"

namespace orion::model {

ParamShapes graph_param_shapes(const ir::Graph& graph) {
  ParamShapes out;
  for (ir::ValueId id : graph.nodes_of(ir::Op::param)) out.emplace_back(graph.node(id).name, graph.node(id).type.shape);
  return out;
}

ParamShapes kept_params(ParamShapes params, const ParamFilter& keep) {
  if (keep) std::erase_if(params, [&](const auto& p) { return !keep(p.first); });
  return params;
}

void check_named_weights(const TensorMap& weights, const ParamShapes& params, const std::string& source) {
  for (const auto& [name, shape] : params) {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error::in_file(source, "tensor " + name + " is missing");
    if (it->second.shape() != shape)
      throw Error::in_file(source, "tensor " + name + " has shape " + shape_str(it->second.shape()) +
                                       ", the config needs " + shape_str(shape));
  }
}

std::string NamePrefix::stored_name(std::string_view name) const {
  if (!name.starts_with(param)) return std::string(name);
  return stored + std::string(name.substr(param.size()));
}

std::string_view NamePrefix::param_name(std::string_view name, std::string& buffer) const {
  if (!name.starts_with(stored)) return name;
  buffer = param + std::string(name.substr(stored.size()));
  return buffer;
}

TensorMap read_named_weights(const Checkpoint& checkpoint, const ParamShapes& params, const NamePrefix& prefix,
                             const std::function<bool(std::string_view)>& is_known_extra, std::string_view arch,
                             const MlxQuantization* quant, QuantizedMatrices* quantized, const ParamFilter& keep) {
  TensorMap weights;
  std::set<std::string, std::less<>> quantized_extras;  // the modules' ".scales" and ".biases"
  std::set<std::string, std::less<>> left;  // params `keep` leaves out, checked but not read
  for (const auto& [pname, shape] : params) {
    const std::string name = prefix.stored_name(pname);
    const std::string module = quantized_module_of(name);
    if (const SafetensorsFile* scales = module.empty() ? nullptr : checkpoint.file_of(module + ".scales")) {
      const std::string& path = scales->path();
      if (!quant)
        throw Error::in_file(path, "tensor " + module + ".scales is quantized weights' scales, but config.json has no "
                                   "\"quantization\"");
      const std::optional<exec::cpu::AffineFormat> f = quant->format_of(module);
      if (!f) throw Error::in_file(path, "tensor " + module + ".scales is there, but config.json keeps " + module + " in floats");
      if (!quantized) throw Error::in_file(path, "tensor " + module + ".scales: quantized weights are read by the Llama family only");
      if (keep && !keep(pname)) left.insert(pname);
      else quantized->emplace(pname, read_quantized_matrix(checkpoint, module, shape, *f));
      quantized_extras.insert(module + ".scales");
      quantized_extras.insert(module + ".biases");
      continue;
    }
    const SafetensorsFile* file = checkpoint.file_of(name);
    if (!file) throw Error::in_file(checkpoint.path(), "tensor " + name + " is missing");
    const std::string& path = file->path();
    const SafetensorsEntry* e = file->find(name);
    if (e->shape != shape)
      throw Error::in_file(path, "tensor " + name + " has shape " + shape_str(e->shape) + ", config.json needs " +
                                     shape_str(shape));
    if (!is_float(e->dtype))
      throw Error::in_file(path, "tensor " + name + " has dtype " + std::string(dtype_name(e->dtype)) +
                                     ", expected a float type");
    if (keep && !keep(pname)) left.insert(pname);
    else weights.emplace(pname, file->tensor_as(name, DType::f32));
  }
  for (const SafetensorsFile& file : checkpoint.files())
    for (const SafetensorsEntry& e : file.entries()) {
      std::string buffer;
      const std::string_view n = prefix.param_name(e.name, buffer);
      if (!weights.contains(n) && !(quantized && quantized->contains(n)) && !left.contains(n) && !is_known_extra(n) &&
          !quantized_extras.contains(e.name))
        throw Error::in_file(file.path(), "tensor " + e.name + " is not part of a " + std::string(arch) +
                                              " model with this config");
    }
  return weights;
}

}  // namespace orion::model
