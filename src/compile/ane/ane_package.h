#pragma once
// A compiled ANE package: what `orion compile --target ane` writes and a runtime runs.
//
//   PKG/manifest.json            this file's structures, as JSON (docs/FORMATS.md)
//   PKG/<kernel>/model.mil       one ANE kernel: MIL text...
//   PKG/<kernel>/weights/weight.bin   ...and its baked fp16 weights (blob format)
//   PKG/<host>/graph.ir          one host segment: IR text, run by the CPU executor
//   PKG/host_weights.bin         the params host segments read (the embeddings), fp32 blobs
//   PKG/device_weights.bin       the params kernels take as inputs, fp16 blobs (weights as
//                                inputs only)
//
// A package holds programs (a model's prefill and decode, each compiled for fixed shapes);
// a program is a list of steps, kernels and host segments, run in order over one table of
// values named as the manifest names them. With weights as inputs, steps of the same shape (the
// layers of a model) share one kernel folder, compiled once: the kernel's I/O has names of its
// own, and each step says which of its values and params they are (`bind`). The manifest is read as untrusted input: every
// field is checked, and errors name the file and the JSON path.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "compile/ane/ane_validator.h"
#include "compile/mil/mil_syntax.h"
#include "compile/ane/partition.h"
#include "compile/kernel_io.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace orion::compile {

inline constexpr const char* kPackageFormat = "orion-ane-package";
inline constexpr int kPackageVersion = 3;
inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kHostWeightsFile = "host_weights.bin";
inline constexpr const char* kDeviceWeightsFile = "device_weights.bin";
inline constexpr const char* kHostGraphFile = "graph.ir";

struct PackageValue {
  std::string name;   // the model's name ("past_k.0")
  std::string value;  // the name inside the package ("past_k_0"): a MIL identifier
  DType dtype = DType::f32;
  Shape shape;
};

// Rows (axis 0) or columns (axis 1) [begin, end) of a param.
struct WeightPart {
  int axis = 0;
  std::int64_t begin = 0, end = 0;
  bool operator==(const WeightPart&) const = default;
};

// How a kernel holds its weights: baked into the program as constants, or taken as inputs
// (KernelIoTensor::weight), which lets the layers of one shape share a program.
enum class KernelWeights : std::uint8_t { baked, inputs };
std::string_view kernel_weights_name(KernelWeights w);

struct PackageStep {
  Placement placement = Placement::ane;
  std::string name;  // also its folder, unless `kernel` names another
  int stage = 0;
  // ane: the kernel's I/O as the program binds it, in binding order (alphabetical, ANE027),
  // surfaces and sizes; its names are the program's own (bound_io gives the step's).
  KernelIo io;
  std::string kernel;  // ane: the kernel folder it runs; empty: its own (`name`)
  // ane: the program's I/O names and weight params -> this step's values and params; empty
  // when they are the same (a kernel of its own).
  std::map<std::string, std::string> bind;
  // ane: a weight param of the program that is a part of the step's (a chunk of a head cut for
  // the on-chip budget): which rows or columns, as KernelIoTensor::weight_axis/begin/end say.
  std::map<std::string, WeightPart> weight_parts;
  KernelWeights weights = KernelWeights::baked;
  std::int64_t weight_bytes = 0;
  std::vector<std::string> warnings;  // the validator's
  // host: the values it reads and writes (its graph's inputs and outputs), and the params.
  std::vector<std::string> inputs, outputs, params;
};

struct PackageProgram {
  std::string name;  // "prefill", "decode"
  std::int64_t seq = 0;
  std::vector<PackageValue> inputs, outputs;
  std::vector<PackageStep> steps;  // in run order
  nlohmann::json session;          // the model's conventions (the KV cache's names...)
};

struct HostWeight {
  std::string name;
  Shape shape;             // f32 in host_weights.bin, fp16 in device_weights.bin
  std::uint64_t offset = 0;  // its blob's record in the file
};

// A param no blob holds: the runner is given its value (a LoRA adapter's matrix) and writes it
// into the kernels' weight inputs (KernelIoTensor::weight) and hands it to host steps.
struct RuntimeWeight {
  std::string name;
  Shape shape;  // f32, the param's
};

struct PackageManifest {
  std::string dialect;  // "ios18" or "ios16"
  AneTarget target;
  std::vector<std::string> rules_checked;  // every catalogue rule the validator checked
  std::vector<PackageProgram> programs;
  std::vector<HostWeight> host_weights;
  std::vector<HostWeight> device_weights;      // kernels' weight inputs the package holds
  std::vector<RuntimeWeight> runtime_weights;  // sorted by name; written only when there are any
  std::string weights_reason;  // why the kernels hold their weights as they do (`orion inspect`)
  nlohmann::json model;  // what the package was compiled from (for `orion inspect`)

  const PackageProgram& program(std::string_view name) const;  // throws naming the ones there are
  const PackageProgram* find_program(std::string_view name) const;
};

// The folder of the kernel an ane step runs, and its I/O under the step's names (the table's
// values and the model's params), in the program's binding order.
const std::string& kernel_folder(const PackageStep& step);
KernelIo bound_io(const PackageStep& step);
// `io` with its names and weights renamed by `bind`, and the weights `parts` names made parts.
KernelIo bind_io(const KernelIo& io, const std::map<std::string, std::string>& bind,
                 const std::map<std::string, WeightPart>& parts);

nlohmann::json manifest_to_json(const PackageManifest& m);
// `file` names the manifest in errors ("PKG/manifest.json: at /programs/0/steps/2/io: ...").
PackageManifest manifest_from_json(const nlohmann::json& j, const std::string& file);
PackageManifest read_manifest(const std::string& package_dir);

}  // namespace orion::compile
