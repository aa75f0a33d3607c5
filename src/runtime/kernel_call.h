#pragma once
// One evaluation of a compiled kernel on token-major values, as every runner does it: the
// program's bindings checked against the KernelIo the compiler wrote (ANE027: a program bound
// in another order computes garbage silently), inputs packed into [1, C, 1, S_pad] fp16
// surfaces in binding order, outputs unpacked to token-major f32. Shared by the package runner
// and the device graph (training).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compile/kernel_io.h"
#include "core/tensor.h"
#include "core/tensor_map.h"
#include "device/ane_device.h"

namespace orion::runtime {

// The value `name`, or an orion::Error saying that `step` reads it before anything computed it.
const Tensor& lookup_value(const TensorMap& table, const std::string& name, const std::string& step);

// Throws orion::Error naming `where` (the kernel's folder or step) when the loaded program's
// inputs or outputs are not `io`'s, in its order.
void check_bindings(const device::AneDevice& device, device::AneProgramId id, const compile::KernelIo& io,
                    const std::string& where);

struct KernelCallTiming {
  double pack_ms = 0;    // packing inputs and unpacking outputs
  double device_ms = 0;  // the device's evaluation
  std::int64_t packed_bytes = 0;  // fp16 bytes packed into input surfaces (resident ones are not)
};

// The surfaces of one kernel, allocated once for its I/O and reused by every call.
//
// An input may be kept resident: its surface is written by the caller (a KV cache, a column
// per decode step: runtime/package_session.h) and left alone by call(), which neither reads its
// value from the table nor packs it. A cache of thousands of positions then costs nothing per
// step instead of a full pack (and on the hardware, one column written instead of the cache).
//
// Runtime weights (compile::KernelIoTensor::weight) are always resident: write_weights packs
// them, and they stay in their surfaces for every call until the next write.
//
// The surfaces are the device's (AneDevice::make_surface): on the `ane` device its IOSurfaces,
// so a resident cache or weight reaches the hardware without a copy per call.
class KernelSurfaces {
 public:
  KernelSurfaces(device::AneDevice& device, const compile::KernelIo& io);
  // Packs each runtime weight of `io` from `params` (by param name, any float dtype) into its
  // surface, fp16 clamped (ANE032). Returns the fp16 bytes written. Throws orion::Error when a
  // weight is missing or of another shape.
  std::int64_t write_weights(const compile::KernelIo& io, const TensorMap& params);
  // The runtime weights as `other` (surfaces of the same io) holds them, copied fp16 to fp16.
  // Returns the bytes copied.
  std::int64_t copy_weights(const compile::KernelIo& io, const KernelSurfaces& other);

  // Evaluates program `id` on io's inputs read from `table` by name (each [seq, C], a
  // fixed-length one [S, C]); writes its outputs into `table`. `step` names the kernel in errors.
  KernelCallTiming call(device::AneDevice& device, device::AneProgramId id, const compile::KernelIo& io, TensorMap& table,
                        const std::string& step);

  // Keeps input `name` resident and returns its surface; nullptr when io has no such input.
  device::AneSurface* keep_resident(const compile::KernelIo& io, std::string_view name);
  // The surface of output `name` as the last call left it; nullptr when io has no such output.
  const device::AneSurface* output(const compile::KernelIo& io, std::string_view name) const;

 private:
  std::vector<device::AneSurface> in_, out_;
  std::vector<bool> resident_;  // by input
};

}  // namespace orion::runtime
