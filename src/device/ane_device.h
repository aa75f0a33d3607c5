#pragma once
// The device interface the runtime drives: a kernel folder (model.mil + the weight files it
// names) compiled into a program, loaded, evaluated on I/O surfaces, unloaded. Two devices
// implement it: `ane-sim` (device/ane_sim.h, everywhere) and `ane` (device/ane_bridge_apple.h,
// the Apple Neural Engine through its private framework, macOS only).
//
// Surfaces (device/ane_surface.h) are host memory, or the device's own from make_surface: the
// `ane` device binds its own IOSurfaces as they are, and copies a host surface into one of its
// own before the evaluation and out after it (docs/ane/DEVICE.md, "Surfaces"). Binding is
// positional: inputs[i] binds inputs(id)[i], which lists the program's inputs in the order the
// hardware binds them (alphabetical by name, ANE027); outputs likewise.
//
// One device object stands for one process's view of the hardware: its counters are the
// process's, and they are what the compile budget (ANE030) is counted against.
//
// Threads: calls for different programs may come from different threads at once (a runtime
// compiles the next kernel in the background while it evaluates this one); the calls for one
// program must not overlap. The counters and timings may be read from any thread.
#include <cstdint>
#include <string>
#include <vector>

#include "device/ane_surface.h"
#include "ir/type.h"

namespace orion::device {

using AneProgramId = int;

// One input or output of a program: its name in the MIL text and its tensor type.
struct AneIo {
  std::string name;
  ir::TensorType type;
};

// Wall-clock milliseconds of the most recent successful call of each kind (0 before the first).
// A compile includes reading the folder; an evaluation includes any copying of surfaces.
struct AneTimings {
  double compile_ms = 0;
  double load_ms = 0;
  double evaluate_ms = 0;
};

class AneDevice {
 public:
  virtual ~AneDevice() = default;

  // Compiles folder/model.mil with the weight files it names. Throws orion::Error naming the
  // folder and the reason when the device refuses it.
  virtual AneProgramId compile(const std::string& folder) = 0;
  virtual void load(AneProgramId id) = 0;
  virtual void unload(AneProgramId id) = 0;

  // A zero-filled surface of `bytes` for this device's evaluations, the caller's to keep (it
  // may outlive the device). The `ane` device backs it with an IOSurface it binds without a
  // copy; by default it is host memory. A surface the device made is in one evaluation at a
  // time. Any thread may call it.
  virtual AneSurface make_surface(std::size_t bytes) { return AneSurface(bytes); }

  // Runs a loaded program; surfaces in binding order (inputs(id), outputs(id)). All inputs must
  // have one allocation size, all outputs one (ANE010).
  virtual void evaluate(AneProgramId id, const std::vector<const AneSurface*>& inputs,
                        const std::vector<AneSurface*>& outputs) = 0;

  // As evaluate, for a caller that reads only the first `live_columns` columns (axis 3) of
  // each output: the device may leave the other columns of the outputs as it likes, and the
  // live columns are the bits evaluate gives. The hardware computes every column, so by default
  // this is evaluate; ane-sim skips the padding columns when it has proven that it may
  // (device/ane_live_columns.h), which is most of a decode step's work.
  virtual void evaluate_live(AneProgramId id, const std::vector<const AneSurface*>& inputs,
                             const std::vector<AneSurface*>& outputs, std::int64_t /*live_columns*/) {
    evaluate(id, inputs, outputs);
  }

  virtual const std::vector<AneIo>& inputs(AneProgramId id) const = 0;
  virtual const std::vector<AneIo>& outputs(AneProgramId id) const = 0;

  // Compiles attempted by this process, and programs loaded now.
  virtual int compiles() const = 0;
  virtual int loaded() const = 0;
  virtual AneTimings timings() const = 0;

 protected:
  AneDevice() = default;
  AneDevice(const AneDevice&) = delete;
  AneDevice& operator=(const AneDevice&) = delete;
};

}  // namespace orion::device
