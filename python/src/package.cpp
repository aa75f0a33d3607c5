// orion.compile and orion.inspect: a model compiled into an ANE package as `orion compile
// --target ane` compiles it, and a package's manifest (or a GGUF file's header) as `orion
// inspect --json` prints it.
#include <pybind11/stl.h>

#include "bindings.h"
#include "compile/ane/ane_package.h"
#include "engine/model_package.h"
#include "model/any_model.h"
#include "model/formats/gguf.h"

namespace orion::python {

void bind_package(py::module_& m) {
  const engine::AnePackageOptions defaults;
  m.def(
      "compile",
      [](const std::string& model_path, const std::string& target, const std::string& out, std::int64_t seq,
         std::int64_t context, const std::string& weights, const std::string& ane_weights, const std::string& dialect,
         bool m1_m2, bool force, bool verbose) {
        if (target != "ane") throw ArgumentError("unknown target '" + target + "' (ane)");
        if (seq < 1) throw ArgumentError("seq must be 1 or more");
        if (context < 0) throw ArgumentError("context must be 0 (the model's) or more");
        engine::AnePackageOptions o;
        o.seq = seq;
        o.context = context;
        o.weights = weights;
        o.ane_weights = ane_weights;
        o.dialect = dialect;
        o.m1_m2 = m1_m2;
        compile::PackageReport r;
        {
          py::gil_scoped_release nogil;
          const model::AnyModel any = model::load_any_model(model_path, context > 0 ? context + 1 : 0);
          r = engine::compile_model_package(model::causal_lm(any), model_path, o, out, force, verbose);
        }
        py::dict d;
        d["package"] = out;
        d["kernels"] = r.kernels;
        d["programs"] = r.programs;
        d["host_segments"] = r.host_segments;
        d["weights"] = std::string(compile::kernel_weights_name(r.weights));
        d["kernel_weight_bytes"] = r.kernel_weight_bytes;
        d["host_weight_bytes"] = r.host_weight_bytes;
        return d;
      },
      py::arg("model_path"), py::kw_only(), py::arg("target") = "ane", py::arg("out"), py::arg("seq") = defaults.seq,
      py::arg("context") = defaults.context, py::arg("weights") = defaults.weights,
      py::arg("ane_weights") = defaults.ane_weights, py::arg("dialect") = defaults.dialect, py::arg("m1_m2") = false,
      py::arg("force") = false, py::arg("verbose") = false,
      R"(Compiles the model folder `model_path` into an ANE package folder `out`, as `orion compile -m
MODEL_PATH --target ane -o OUT` does, with its options under the same names (seq: the prefill
window; context: the decode cache's slots, 0 for the model's; weights: fp16, int8, int4, uint4
or lut4; ane_weights: auto, baked or inputs). force replaces an existing package; verbose
prints a line per step on stderr. Returns a dict of what was written; orion.inspect(out) reads it
back, and orion.load(model_path, device="ane-sim", package=out) runs it.)");

  m.def(
      "inspect",
      [](const std::string& path) {
        nlohmann::json j;
        {
          py::gil_scoped_release nogil;
          j = model::is_gguf_file(path) ? model::gguf_header_json(model::GgufFile::open(path))
                                        : compile::manifest_to_json(compile::read_manifest(path));
        }
        return python_of(j);
      },
      py::arg("package"),
      R"(A compiled package's manifest as read and checked (a dict: the model, the target, each program's
steps, kernels and host segments), or a GGUF file's header: what `orion inspect --json` prints.)");
}

}  // namespace orion::python
