#pragma once
// Generation from Python: model.generate and model.chat, whole or streamed (orion.Stream).
#include "bindings.h"
#include "py_model.h"

namespace orion::python {

void bind_generation(py::module_& m, py::class_<PyModel, ModelRef>& model);

}  // namespace orion::python
