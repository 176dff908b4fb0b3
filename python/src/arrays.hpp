#pragma once
// The one place where Python arrays meet the libraries: DLPack inputs checked (dtype, shape, layout, device)
// with a ValueError naming the argument, never converted or copied; outputs allocated on the input's device
// (CUDA: from the stream-ordered pool, on the call's stream) and handed back as arrays of the caller's
// framework (NumPy, PyTorch, CuPy, JAX) without a copy. docs/PYTHON.md states the ownership rules.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"

namespace s3d::python {

namespace nb = nanobind;

/// The array library an input came from: outputs are returned as the same kind of array.
enum class Framework { kNumpy, kTorch, kCupy, kJax, kOther };

/// Element types the ops take and return.
enum class DType { kFloat32, kFloat64, kInt32, kInt64, kUint8, kUint16 };
const char* dtype_name(DType dtype);

/// A checked input array: C-contiguous, of the expected dtype and shape, on a CPU or CUDA device.
struct Input {
  nb::ndarray<nb::ro> array;  ///< the DLPack import (empty for a torch tensor, read through its attributes)
  nb::handle object;          ///< what the caller passed (for its framework; it outlives the call)
  nb::dlpack::dtype dtype{};
  Device device;  ///< cpu, or cuda:N of the array
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
  std::int64_t dim(std::size_t i) const { return shape[i]; }
  std::int64_t size() const;
};

/// A shape pattern: a fixed extent, or kAny (-1) for any extent.
inline constexpr std::int64_t kAny = -1;

/// Imports `object` as `name`: the dtype one of `dtypes`, the shape `shape` (kAny matches any extent).
/// @throws nb::value_error "NAME: expected ..., got ..." naming what differs.
Input input(nb::handle object, const char* name, std::initializer_list<DType> dtypes,
            std::initializer_list<std::int64_t> shape);
/// As input(), with the number of dimensions free between `min_ndim` and `max_ndim` (shapes checked by the caller).
Input input_any_shape(nb::handle object, const char* name, std::initializer_list<DType> dtypes, int min_ndim,
                      int max_ndim);
/// The dtype of a checked input.
DType dtype_of(const Input& input);

/// Every input on one device. @throws nb::value_error naming the first that differs from `first`.
void require_same_device(const Input& first, std::initializer_list<const Input*> others);

/// The caller's framework, told by the type of `object`.
Framework framework_of(nb::handle object);

/// The CUDA stream of a call: `stream` None (the framework's current stream for a torch or CuPy input, the
/// legacy default stream otherwise), an int handle, or an object with `__cuda_stream__`, `cuda_stream` or `ptr`.
/// nullptr for a CPU device.
StreamHandle resolve_stream(nb::handle stream, const Input& like);

/// A new output of `shape` and `dtype` on `device`. CUDA: allocated from the stream-ordered pool on `stream`
/// and released on it by the array's deleter. Returned as the caller's framework array by export_array.
struct Output {
  nb::ndarray<> array;  ///< a new array (empty for a caller's `out=`)
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  nb::handle given;               ///< the caller's `out=` array, when the output is one
  StreamHandle stream = nullptr;  ///< the stream a device output was allocated on
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};
Output allocate(DType dtype, const std::vector<std::int64_t>& shape, const Device& device, StreamHandle stream);
/// A host output that takes over `values` (no copy).
template <typename T>
Output adopt(std::vector<T>&& values, const std::vector<std::int64_t>& shape);

/// `out` as an array of `framework` (zero-copy through DLPack).
nb::object export_array(const Output& out, Framework framework);

/// A caller's `out=` array: checked like an input (dtype, the result's shape, device), writable.
/// @throws InvalidArgument naming `name`.
Output output_into(nb::handle object, const char* name, DType dtype, const std::vector<std::int64_t>& shape,
                   const Device& device);
/// The caller's `out` (named `name`) when given, else a new array (allocate()).
Output destination(nb::handle out, const char* name, DType dtype, const std::vector<std::int64_t>& shape,
                   const Device& device, StreamHandle stream);
/// What a call returns for `out`: the caller's own `out=` array, or the new array as `framework`'s.
nb::object result(const Output& out, Framework framework);

}  // namespace s3d::python
