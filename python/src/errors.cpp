// s3d's typed C++ errors as Python exceptions. Each derives from s3d.Error and from the built-in exception a
// Python caller would catch for it (s3d.InvalidArgument is a ValueError, s3d.OutOfMemory a MemoryError), and
// carries the same one-line message the tools print.
#include <Python.h>

#include <nanobind/nanobind.h>

#include "s3d/core/errors.hpp"

namespace s3d::python {
namespace nb = nanobind;

namespace {

PyObject* new_error(nb::module_& m, const char* name, PyObject* base, PyObject* builtin, const char* doc) {
  const std::string qualified = std::string("s3d.") + name;
  nb::object bases = builtin ? nb::make_tuple(nb::handle(base), nb::handle(builtin)) : nb::make_tuple(nb::handle(base));
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;  // kept for the life of the process (the module holds a reference too)
}

}  // namespace

void bind_errors(nb::module_& m) {
  static PyObject* error = nullptr;
  static PyObject* invalid_argument = nullptr;
  static PyObject* io_error = nullptr;
  static PyObject* data_error = nullptr;
  static PyObject* cuda_error = nullptr;
  static PyObject* device_unavailable = nullptr;
  static PyObject* out_of_memory = nullptr;
  error = new_error(m, "Error", PyExc_Exception, nullptr, "Base of every s3d error.");
  invalid_argument = new_error(m, "InvalidArgument", error, PyExc_ValueError,
                               "A parameter outside its documented range (the caller's mistake).");
  io_error = new_error(m, "IoError", error, PyExc_OSError, "A file missing, unreadable or not in its format.");
  data_error = new_error(m, "DataError", error, PyExc_ValueError,
                         "Input that parses but cannot be used (non-finite coordinates, duplicates, ...).");
  cuda_error = new_error(m, "CudaError", error, PyExc_RuntimeError, "A CUDA call or kernel failed.");
  device_unavailable = new_error(m, "DeviceUnavailable", error, PyExc_RuntimeError,
                                 "CUDA was asked for but no usable GPU is visible, or this build has no CUDA.");
  out_of_memory = new_error(m, "OutOfMemory", error, PyExc_MemoryError, "A device or host allocation failed.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      PyErr_SetString(invalid_argument, e.what());
    } catch (const IoError& e) {
      PyErr_SetString(io_error, e.what());
    } catch (const DataError& e) {
      PyErr_SetString(data_error, e.what());
    } catch (const CudaError& e) {
      PyErr_SetString(cuda_error, e.what());
    } catch (const DeviceUnavailable& e) {
      PyErr_SetString(device_unavailable, e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(out_of_memory, e.what());
    } catch (const Error& e) {
      PyErr_SetString(error, e.what());
    }
  });
}

}  // namespace s3d::python
