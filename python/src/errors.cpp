// Orion's errors as Python exceptions: orion::Error is orion.Error with the message the CLI
// prints; a bad argument (ArgumentError, or a chat request the server's reader refuses) is
// orion.ArgumentError, an orion.Error that is also a ValueError. And the JSON and text
// conversions every part shares.
#include <pybind11/numpy.h>

#include "bindings.h"
#include "serve/openai_wire.h"

namespace orion::python {

void bind_errors(py::module_& m) {
  // Static as pybind11's documentation has it: the translator outlives this call.
  static py::exception<Error> error(m, "Error");
  error.attr("__doc__") =
      "An error Orion reports: a file that is missing or malformed (named, with the place), an option a model "
      "cannot take, a prompt longer than the context... The message is the line the orion command prints.";
  const py::tuple bases = py::make_tuple(error, py::handle(PyExc_ValueError));
  static PyObject* argument = PyErr_NewExceptionWithDoc(
      "orion._orion.ArgumentError", "An argument Orion cannot take (an unknown device or dtype, a malformed message list).",
      bases.ptr(), nullptr);
  if (!argument) throw py::error_already_set();
  m.attr("ArgumentError") = py::handle(argument);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ArgumentError& e) {
      PyErr_SetString(argument, e.what());
    } catch (const serve::ApiError& e) {
      PyErr_SetString(argument, (e.param.empty() ? e.message : e.param + ": " + e.message).c_str());
    } catch (const Error& e) {
      error(e.what());
    }
  });
}

namespace {

template <class Json>
Json parse_python(const py::handle& value, const char* what) {
  std::string text;
  try {
    text = py::module_::import("json").attr("dumps")(value).cast<std::string>();
  } catch (const py::error_already_set& e) {
    throw ArgumentError(std::string(what) + " must be made of dicts, lists, strings, numbers, booleans and None: " + e.what());
  }
  return Json::parse(text);
}

}  // namespace

nlohmann::json json_of(const py::handle& value, const char* what) { return parse_python<nlohmann::json>(value, what); }

nlohmann::ordered_json ordered_json_of(const py::handle& value, const char* what) {
  return parse_python<nlohmann::ordered_json>(value, what);
}

py::object python_of(const nlohmann::json& value) {
  return py::module_::import("json").attr("loads")(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

py::str text_of(std::string_view bytes) {
  PyObject* s = PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "replace");
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

std::vector<std::int32_t> ids_of(const py::handle& ids, const char* what) {
  const std::string name(what);
  std::vector<std::int64_t> values;
  if (py::isinstance<py::str>(ids) || py::isinstance<py::bytes>(ids)) {
    throw ArgumentError(name + " must be token ids (a list or array of ints), not text");
  } else if (py::isinstance<py::array>(ids)) {
    const auto array = py::reinterpret_borrow<py::array>(ids);
    if (array.ndim() != 1 || (array.dtype().kind() != 'i' && array.dtype().kind() != 'u'))
      throw ArgumentError(name + " must be a 1-D array of integers, not " + std::string(py::str(array.dtype())) + " of " +
                          std::to_string(array.ndim()) + " dimensions");
    const auto as64 = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    values.assign(as64.data(), as64.data() + as64.size());
  } else if (py::isinstance<py::sequence>(ids)) {
    for (const py::handle item : ids) {
      if (!py::isinstance<py::int_>(item))
        throw ArgumentError(name + "[" + std::to_string(values.size()) + "] is " + std::string(py::repr(item)) + ", not an int");
      values.push_back(item.cast<std::int64_t>());
    }
  } else {
    throw ArgumentError(name + " must be a list or array of token ids, not " + std::string(py::str(ids.get_type().attr("__name__"))));
  }
  std::vector<std::int32_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0 || values[i] > INT32_MAX)
      throw ArgumentError(name + "[" + std::to_string(i) + "] is " + std::to_string(values[i]) + ", not a token id");
    out[i] = static_cast<std::int32_t>(values[i]);
  }
  return out;
}

}  // namespace orion::python
