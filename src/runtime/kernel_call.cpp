#include "runtime/kernel_call.h"

#include <cstring>

#include "core/error.h"
#include "core/stopwatch.h"
#include "device/ane_packing.h"

namespace orion::runtime {

const Tensor& lookup_value(const TensorMap& table, const std::string& name, const std::string& step) {
  auto it = table.find(name);
  if (it == table.end()) throw Error("step " + step + ": no value %" + name + " was computed before it");
  return it->second;
}

void check_bindings(const device::AneDevice& device, device::AneProgramId id, const compile::KernelIo& io,
                    const std::string& where) {
  const auto check = [&](const std::vector<device::AneIo>& got, const std::vector<compile::KernelIoTensor>& want,
                         const char* what) {
    bool same = got.size() == want.size();
    for (std::size_t i = 0; same && i < got.size(); ++i) same = got[i].name == want[i].name && got[i].type.shape == want[i].padded;
    if (!same) throw Error::in_file(where, std::string("the program's ") + what + " are not the ones its compiler wrote");
  };
  check(device.inputs(id), io.inputs, "inputs");
  check(device.outputs(id), io.outputs, "outputs");
}

KernelSurfaces::KernelSurfaces(device::AneDevice& device, const compile::KernelIo& io) {
  for (std::size_t i = 0; i < io.inputs.size(); ++i) in_.push_back(device.make_surface(static_cast<std::size_t>(io.input_bytes)));
  for (std::size_t i = 0; i < io.outputs.size(); ++i) out_.push_back(device.make_surface(static_cast<std::size_t>(io.output_bytes)));
  resident_.assign(in_.size(), false);
  for (std::size_t i = 0; i < io.inputs.size(); ++i) resident_[i] = !io.inputs[i].weight.empty();
}

std::int64_t KernelSurfaces::write_weights(const compile::KernelIo& io, const TensorMap& params) {
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < io.inputs.size(); ++i) {
    const compile::KernelIoTensor& k = io.inputs[i];
    if (k.weight.empty()) continue;
    auto it = params.find(k.weight);
    if (it == params.end()) throw Error("kernel input %" + k.name + ": no value for the runtime weight " + k.weight);
    Tensor value = it->second;
    if (k.weight_axis >= 0) {  // one chunk of the param
      if (value.rank() != 2 || k.weight_axis > 1 || k.weight_begin < 0 || k.weight_end > value.shape()[static_cast<std::size_t>(k.weight_axis)] ||
          k.weight_begin >= k.weight_end)
        throw Error("kernel input %" + k.name + ": the weight " + k.weight + " is " + shape_str(value.shape()) +
                    ", which has no part [" + std::to_string(k.weight_begin) + ", " + std::to_string(k.weight_end) + ") on axis " +
                    std::to_string(k.weight_axis));
      value = value.slice(k.weight_axis, k.weight_begin, k.weight_end);
    }
    const Shape& w = value.shape();
    const std::int64_t rows = w.size() == 2 ? w[0] : 1;
    if ((w.size() != 1 && w.size() != 2) || rows != k.logical[1] || w.back() > k.logical[3] || w.back() + 32 <= k.logical[3])
      throw Error("kernel input %" + k.name + ": the weight " + k.weight + " is " + shape_str(w) + ", the kernel reads " +
                  shape_str(k.logical));
    bytes += device::pack_weight(value, k.padded[3], in_[i]);
  }
  return bytes;
}

std::int64_t KernelSurfaces::copy_weights(const compile::KernelIo& io, const KernelSurfaces& other) {
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < io.inputs.size(); ++i) {
    const compile::KernelIoTensor& k = io.inputs[i];
    if (k.weight.empty()) continue;
    const auto n = static_cast<std::size_t>(k.logical[1] * k.padded[3] * 2);
    std::memcpy(in_[i].bytes().data(), other.in_[i].bytes().data(), n);
    bytes += static_cast<std::int64_t>(n);
  }
  return bytes;
}

device::AneSurface* KernelSurfaces::keep_resident(const compile::KernelIo& io, std::string_view name) {
  for (std::size_t i = 0; i < io.inputs.size(); ++i)
    if (io.inputs[i].name == name) {
      resident_[i] = true;
      return &in_[i];
    }
  return nullptr;
}

const device::AneSurface* KernelSurfaces::output(const compile::KernelIo& io, std::string_view name) const {
  for (std::size_t i = 0; i < io.outputs.size(); ++i)
    if (io.outputs[i].name == name) return &out_[i];
  return nullptr;
}

KernelCallTiming KernelSurfaces::call(device::AneDevice& device, device::AneProgramId id, const compile::KernelIo& io,
                                      TensorMap& table, const std::string& step) {
  KernelCallTiming t;
  Stopwatch sw;
  std::vector<const device::AneSurface*> ins;
  for (std::size_t i = 0; i < io.inputs.size(); ++i) {
    const compile::KernelIoTensor& k = io.inputs[i];
    ins.push_back(&in_[i]);
    if (resident_[i]) continue;
    const Tensor& v = lookup_value(table, k.name, step);
    if (v.shape() != Shape{k.logical[3], k.logical[1]})
      throw Error("step " + step + ": %" + k.name + " is " + shape_str(v.shape()) + ", the kernel reads [" +
                  std::to_string(k.logical[3]) + ", " + std::to_string(k.logical[1]) + "]");
    device::pack_token_major(v, k.padded[3], in_[i]);  // padded[3]: io.padded_seq, or a fixed input's own S
    t.packed_bytes += k.bytes;
  }
  std::vector<device::AneSurface*> outs;
  for (device::AneSurface& s : out_) outs.push_back(&s);
  t.pack_ms += sw.ms();
  sw.restart();
  // Only the first seq columns are read back below: the device may skip the padding ones.
  device.evaluate_live(id, ins, outs, io.seq);
  t.device_ms = sw.ms();
  sw.restart();
  for (std::size_t i = 0; i < io.outputs.size(); ++i) {
    const compile::KernelIoTensor& k = io.outputs[i];
    table[k.name] = device::unpack_token_major(out_[i], k.logical[1], io.seq, io.padded_seq);
  }
  t.pack_ms += sw.ms();
  return t;
}

}  // namespace orion::runtime
