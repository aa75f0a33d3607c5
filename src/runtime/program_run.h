#pragma once
// One program folder (model.mil and its weights/, written by hand, by another tool or by Orion)
// run once on a device with seeded or given inputs, and, when asked, the same text run in f32
// on the CPU executor as the reference: what the program means without the device's fp16.
// `orion mil run` prints and writes what this returns.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/tensor_map.h"
#include "device/ane_device.h"
#include "runtime/device_factory.h"

namespace orion::runtime {

struct ProgramRunOptions {
  DeviceOptions device;      // ane-sim or ane
  std::string inputs;        // a folder of NAME.npy per program input (f16 or f32); "": seeded
  // Inputs by name, taken before the folder and the seed: another device given the values the
  // first one ran with (`orion doctor` holds the ane to ane-sim on the same inputs).
  TensorMap values;
  std::uint64_t seed = 0;    // the seeded inputs: normal(0, 1), each input's own stream
  bool compare = false;      // also run the program in f32 on the CPU executor
  int cpu_threads = 2;       // the CPU executor's, with `compare`
  // Evaluations on the device, the outputs the last one's: with more than one the device's
  // timings() show an evaluation after the first, which sets up the surfaces.
  int evaluations = 1;
};

struct ProgramValue {
  std::string name;
  Tensor value;
};

struct ProgramRun {
  std::vector<ProgramValue> inputs;     // as bound, in the device's binding order and the input's dtype
  std::vector<ProgramValue> outputs;    // as the device gave them, in the output's dtype (f16 or f32)
  std::vector<Tensor> reference;        // with `compare`: outputs[i]'s value from the CPU, f32
};

// Throws orion::Error unless `dir` is a folder holding model.mil.
void require_program_folder(const std::string& dir);

// Compiles, loads, evaluates and unloads the program on the device, each surface sized for its
// tensor in the I/O's dtype (fp16 or fp32), at least the minimum (ANE012). Throws orion::Error
// for a cpu device, I/O of another dtype, an input file that is missing or of another shape or
// a non-float type, and what the device refuses.
ProgramRun run_program_folder(const std::string& dir, const ProgramRunOptions& options);
// The same on a device already open (options.device is not used): one device object is one
// process's count of compiles (ANE030), so a caller running many programs keeps one. The
// program is unloaded whether or not the evaluation succeeds.
ProgramRun run_program_folder(const std::string& dir, device::AneDevice& device, const ProgramRunOptions& options);

// OUT/inputs/NAME.npy per input; OUT/NAME.npy and the raw values per output, OUT/NAME.f16 or
// OUT/NAME.f32 by the output's dtype.
void write_program_run(const ProgramRun& run, const std::string& out);

}  // namespace orion::runtime
