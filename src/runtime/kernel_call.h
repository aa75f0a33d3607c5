#pragma once
// One evaluation of a compiled kernel on token-major values, as every runner does it: the
// program's bindings checked against the KernelIo the compiler wrote (ANE027: a program bound
// in another order computes garbage silently), inputs packed into [1, C, 1, S_pad] fp16
// surfaces in binding order, outputs unpacked to token-major f32. Shared by the package runner
// and the device graph (training).
#include <map>
#include <string>
#include <vector>

#include "compile/passes/legalize_io.h"
#include "core/tensor.h"
#include "device/ane_device.h"

namespace orion::runtime {

// Values by the names the kernels and host segments bind.
using Values = std::map<std::string, Tensor, std::less<>>;

// The value `name`, or an orion::Error saying that `step` reads it before anything computed it.
const Tensor& lookup_value(const Values& table, const std::string& name, const std::string& step);

// Throws orion::Error naming `where` (the kernel's folder or step) when the loaded program's
// inputs or outputs are not `io`'s, in its order.
void check_bindings(const device::AneDevice& device, device::AneProgramId id, const compile::KernelIo& io,
                    const std::string& where);

struct KernelCallTiming {
  double pack_ms = 0;    // packing inputs and unpacking outputs
  double device_ms = 0;  // the device's evaluation
};

// The surfaces of one kernel, allocated once for its I/O and reused by every call.
class KernelSurfaces {
 public:
  explicit KernelSurfaces(const compile::KernelIo& io);

  // Evaluates program `id` on io's inputs read from `table` by name (each [seq, C]); writes
  // its outputs into `table`. `step` names the kernel in errors.
  KernelCallTiming call(device::AneDevice& device, device::AneProgramId id, const compile::KernelIo& io, Values& table,
                        const std::string& step);

 private:
  std::vector<device::AneSurface> in_, out_;
};

}  // namespace orion::runtime
