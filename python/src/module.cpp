// The compiled part of the Python module `orion` (python/orion/__init__.py is its face).
#include "bindings.h"

PYBIND11_MODULE(_orion, m) {
  m.doc() = "Orion's library for Python: models, tokenizers, training and ANE packages (see the package orion).";
  orion::python::bind_errors(m);
  orion::python::bind_tokenizer(m);
  orion::python::bind_model(m);
  orion::python::bind_train(m);
  orion::python::bind_package(m);
}
