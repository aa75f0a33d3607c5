#pragma once
// The compiled part of the Python module, orion._orion: each part of the API is bound in a file
// of its own (python/README.md), on what they share here: Orion's errors as Python exceptions,
// Python values as JSON and back, and Orion's text as str.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace orion::python {

namespace py = pybind11;

// A bad argument from Python (a device, a dtype, a message list): orion.ArgumentError, which is
// both an orion.Error and a ValueError.
class ArgumentError : public Error {
 public:
  using Error::Error;
};

void bind_errors(py::module_& m);
void bind_tokenizer(py::module_& m);
void bind_model(py::module_& m);
void bind_train(py::module_& m);
void bind_package(py::module_& m);

// A Python value (dicts, lists, strings, numbers) as JSON, through Python's json module; `what`
// names the argument in the ArgumentError a value JSON cannot hold raises.
nlohmann::json json_of(const py::handle& value, const char* what);
nlohmann::ordered_json ordered_json_of(const py::handle& value, const char* what);
py::object python_of(const nlohmann::json& value);
// Bytes Orion produced as a str; bytes that are not UTF-8 (a random model's output) replaced.
py::str text_of(std::string_view bytes);
// Token ids from a sequence of ints or an integer array; ArgumentError names `what` otherwise.
std::vector<std::int32_t> ids_of(const py::handle& ids, const char* what);

}  // namespace orion::python
