#pragma once
// A compiled ANE package: what `orion compile --target ane` writes and a runtime runs.
//
//   PKG/manifest.json            this file's structures, as JSON (docs/FORMATS.md)
//   PKG/<kernel>/model.mil       one ANE kernel: MIL text...
//   PKG/<kernel>/weights/weight.bin   ...and its baked fp16 weights (blob format)
//   PKG/<host>/graph.ir          one host segment: IR text, run by the CPU executor
//   PKG/host_weights.bin         the params host segments read (the embeddings), fp32 blobs
//
// A package holds programs (a model's prefill and decode, each compiled for fixed shapes);
// a program is a list of steps, kernels and host segments, run in order over one table of
// values named as the manifest names them. The manifest is read as untrusted input: every
// field is checked, and errors name the file and the JSON path.
#include <cstdint>
#include <string>
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
inline constexpr int kPackageVersion = 1;
inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kHostWeightsFile = "host_weights.bin";
inline constexpr const char* kHostGraphFile = "graph.ir";

struct PackageValue {
  std::string name;   // the model's name ("past_k.0")
  std::string value;  // the name inside the package ("past_k_0"): a MIL identifier
  DType dtype = DType::f32;
  Shape shape;
};

struct PackageStep {
  Placement placement = Placement::ane;
  std::string name;  // also its folder
  int stage = 0;
  // ane: the kernel's I/O in binding order (alphabetical, ANE027), surfaces and sizes.
  KernelIo io;
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
  Shape shape;             // f32
  std::uint64_t offset = 0;  // its blob's record in host_weights.bin
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
  std::vector<RuntimeWeight> runtime_weights;  // sorted by name; written only when there are any
  nlohmann::json model;  // what the package was compiled from (for `orion inspect`)

  const PackageProgram& program(std::string_view name) const;  // throws naming the ones there are
  const PackageProgram* find_program(std::string_view name) const;
};

nlohmann::json manifest_to_json(const PackageManifest& m);
// `file` names the manifest in errors ("PKG/manifest.json: at /programs/0/steps/2/io: ...").
PackageManifest manifest_from_json(const nlohmann::json& j, const std::string& file);
PackageManifest read_manifest(const std::string& package_dir);

}  // namespace orion::compile
