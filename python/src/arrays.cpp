#include "arrays.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"

namespace s3d::python {
namespace {

nb::dlpack::dtype dlpack_of(DType dtype) {
  using nb::dlpack::dtype_code;
  switch (dtype) {
    case DType::kFloat32:
      return {static_cast<std::uint8_t>(dtype_code::Float), 32, 1};
    case DType::kFloat64:
      return {static_cast<std::uint8_t>(dtype_code::Float), 64, 1};
    case DType::kInt32:
      return {static_cast<std::uint8_t>(dtype_code::Int), 32, 1};
    case DType::kInt64:
      return {static_cast<std::uint8_t>(dtype_code::Int), 64, 1};
    case DType::kUint8:
      return {static_cast<std::uint8_t>(dtype_code::UInt), 8, 1};
    case DType::kUint16:
      return {static_cast<std::uint8_t>(dtype_code::UInt), 16, 1};
  }
  return {};
}

std::size_t bytes_of(DType dtype) { return dlpack_of(dtype).bits / 8; }

bool same(nb::dlpack::dtype a, nb::dlpack::dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

std::string describe_dtype(nb::dlpack::dtype d) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kUint8, DType::kUint16}) {
    if (same(d, dlpack_of(t))) return dtype_name(t);
  }
  const char* kind = d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int)     ? "int"
                     : d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::UInt)  ? "uint"
                     : d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float) ? "float"
                     : d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bool)  ? "bool"
                                                                                          : "dtype";
  return std::string(kind) + std::to_string(d.bits);
}

std::string describe_shape(const std::vector<std::int64_t>& shape) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

std::string describe_pattern(std::initializer_list<std::int64_t> shape) {
  static const char* names[] = {"N", "M", "K", "L"};
  std::ostringstream s;
  s << '[';
  int free_axis = 0;
  int i = 0;
  for (std::int64_t e : shape) {
    s << (i++ ? ", " : "");
    if (e == kAny) {
      s << names[free_axis++ % 4];
    } else {
      s << e;
    }
  }
  s << ']';
  return s.str();
}

std::string expected_dtypes(std::initializer_list<DType> dtypes) {
  std::string text;
  std::size_t i = 0;
  for (DType d : dtypes) {
    text += (i == 0 ? "" : (i + 1 == dtypes.size() ? " or " : ", "));
    text += dtype_name(d);
    ++i;
  }
  return text;
}

[[noreturn]] void reject(const char* name, const std::string& what) {
  throw InvalidArgument(std::string(name) + ": " + what);
}

/// What an array says about itself, from DLPack or from a torch tensor's attributes.
struct Described {
  nb::dlpack::dtype dtype{};
  std::string dtype_text;  ///< for a dtype s3d does not take
  int device_type = 0;
  int device_id = 0;
  std::vector<std::int64_t> strides;  ///< elements; empty = C-contiguous
  const void* data = nullptr;
};

/// torch.Tensor without DLPack: its attributes cost well under a microsecond, where Tensor.__dlpack__ synchronises
/// streams in Python (10-20 us on a GPU) and refuses a tensor of another GPU than the current one. False for
/// anything that is not a torch tensor.
bool describe_torch(nb::handle object, Input& in, Described& d) {
  static PyTypeObject* tensor_type = nullptr;
  static nb::object* dtypes = nullptr;  // [float32, float64, int32, int64, uint8, uint16, strided]
  PyTypeObject* type = Py_TYPE(object.ptr());
  if (tensor_type == nullptr) {
    if (framework_of(object) != Framework::kTorch) return false;
    nb::module_ torch = nb::module_::import_("torch");
    if (!PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(torch.attr("Tensor").ptr()))) return false;
    tensor_type = reinterpret_cast<PyTypeObject*>(torch.attr("Tensor").ptr());
    dtypes = new nb::object(nb::make_tuple(torch.attr("float32"), torch.attr("float64"), torch.attr("int32"),
                                           torch.attr("int64"), torch.attr("uint8"),
                                           nb::getattr(torch, "uint16", nb::none()), torch.attr("strided")));
  }
  if (!PyType_IsSubtype(type, tensor_type)) return false;
  nb::handle dtype = object.attr("dtype");
  const DType ours[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kUint8, DType::kUint16};
  bool known = false;
  for (int i = 0; i < 6; ++i) {
    if (dtype.is((*dtypes)[i])) {
      d.dtype = dlpack_of(ours[i]);
      known = true;
    }
  }
  if (!known) d.dtype_text = nb::str(dtype).c_str();
  if (!object.attr("layout").is((*dtypes)[6])) {
    throw InvalidArgument("expected a strided (dense) tensor, got a sparse one");
  }
  for (nb::handle e : object.attr("shape")) in.shape.push_back(nb::cast<std::int64_t>(e));
  for (nb::handle e : object.attr("stride")()) d.strides.push_back(nb::cast<std::int64_t>(e));
  if (nb::cast<bool>(object.attr("is_cuda"))) {
    d.device_type = nb::device::cuda::value;
    d.device_id = nb::cast<int>(object.attr("get_device")());
  } else if (nb::cast<bool>(object.attr("is_cpu"))) {
    d.device_type = nb::device::cpu::value;
  } else {
    d.device_type = -1;
  }
  d.data = reinterpret_cast<const void*>(nb::cast<std::uintptr_t>(object.attr("data_ptr")()));
  return true;
}

Input import(nb::handle object, const char* name, std::initializer_list<DType> dtypes) {
  Input in;
  in.object = object;
  Described d;
  bool torch_tensor = false;
  try {
    torch_tensor = describe_torch(object, in, d);
  } catch (const InvalidArgument& e) {
    reject(name, e.what());
  }
  if (!torch_tensor) {
    if (!nb::try_cast<nb::ndarray<nb::ro>>(object, in.array, /*convert=*/false)) {
      reject(name, std::string("expected an array (NumPy, PyTorch, CuPy, JAX or any DLPack producer), got ") +
                       nb::type_name(object.type()).c_str());
    }
    const int ndim = static_cast<int>(in.array.ndim());
    in.shape.assign(in.array.shape_ptr(), in.array.shape_ptr() + ndim);
    if (in.array.stride_ptr() != nullptr) d.strides.assign(in.array.stride_ptr(), in.array.stride_ptr() + ndim);
    d.dtype = in.array.dtype();
    d.device_type = in.array.device_type();
    d.device_id = in.array.device_id();
    d.data = static_cast<const std::uint8_t*>(in.array.data_handle()) + in.array.byte_offset();
  }
  bool dtype_ok = false;
  for (DType t : dtypes) dtype_ok = dtype_ok || (d.dtype_text.empty() && same(d.dtype, dlpack_of(t)));
  if (!dtype_ok) {
    reject(name, "expected " + expected_dtypes(dtypes) + ", got " +
                     (d.dtype_text.empty() ? describe_dtype(d.dtype) : d.dtype_text) +
                     " (convert it first: s3d never copies an input silently)");
  }
  in.dtype = d.dtype;
  if (d.device_type == nb::device::cpu::value || d.device_type == nb::device::cuda_host::value) {
    in.device = Device(Device::Kind::kCpu);
  } else if (d.device_type == nb::device::cuda::value || d.device_type == nb::device::cuda_managed::value) {
    in.device = Device(Device::Kind::kCuda, d.device_id);
  } else {
    reject(name, "expected an array on the CPU or a CUDA device");
  }
  // C order: the last axis contiguous and each stride the product of the extents after it (axes of extent 1
  // may have any stride, as NumPy and PyTorch give them).
  // An array without elements has nothing to lay out (NumPy gives a new empty array strides of 0).
  const bool empty = std::find(in.shape.begin(), in.shape.end(), 0) != in.shape.end();
  if (!d.strides.empty() && !empty) {
    std::int64_t expected = 1;
    for (int axis = static_cast<int>(in.shape.size()) - 1; axis >= 0; --axis) {
      if (in.shape[axis] != 1 && d.strides[axis] != expected) {
        reject(name,
               "expected a C-contiguous array, got strides that are not (call .contiguous() or "
               "numpy.ascontiguousarray first)");
      }
      expected *= in.shape[axis];
    }
  }
  in.data = d.data;
  return in;
}

struct DeviceAllocation {
  void* data;
  std::size_t bytes;
  StreamHandle stream;
  int device;
};

Output make_output(void* data, nb::handle owner, DType dtype, const std::vector<std::int64_t>& shape,
                   const Device& device) {
  std::vector<std::size_t> extents(shape.begin(), shape.end());
  Output out;
  out.data = data;
  out.dtype = dtype;
  out.array = nb::ndarray<>(data, extents.size(), extents.data(), owner, nullptr, dlpack_of(dtype),
                            device.is_cuda() ? nb::device::cuda::value : nb::device::cpu::value,
                            device.is_cuda() ? device.index() : 0);
  return out;
}

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kUint8:
      return "uint8";
    case DType::kUint16:
      return "uint16";
  }
  return "?";
}

std::int64_t Input::size() const {
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  return n;
}

Input input(nb::handle object, const char* name, std::initializer_list<DType> dtypes,
            std::initializer_list<std::int64_t> shape) {
  Input in = import(object, name, dtypes);
  bool ok = in.shape.size() == shape.size();
  std::size_t axis = 0;
  for (std::int64_t e : shape) {
    ok = ok && (e == kAny || in.shape[axis] == e);
    ++axis;
  }
  if (!ok) reject(name, "expected shape " + describe_pattern(shape) + ", got " + describe_shape(in.shape));
  return in;
}

Input input_any_shape(nb::handle object, const char* name, std::initializer_list<DType> dtypes, int min_ndim,
                      int max_ndim) {
  Input in = import(object, name, dtypes);
  const int ndim = static_cast<int>(in.shape.size());
  if (ndim < min_ndim || ndim > max_ndim) {
    reject(name, "expected " + std::to_string(min_ndim) + (min_ndim == max_ndim ? "" : "-" + std::to_string(max_ndim)) +
                     " dimensions, got shape " + describe_shape(in.shape));
  }
  return in;
}

DType dtype_of(const Input& input) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kUint8, DType::kUint16}) {
    if (same(input.dtype, dlpack_of(d))) return d;
  }
  return DType::kFloat32;  // unreachable: import() admits only the types above
}

void require_same_device(const Input& first, std::initializer_list<const Input*> others) {
  for (const Input* other : others) {
    if (other->device != first.device) {
      throw InvalidArgument(
          ("expected every array on one device, got " + first.device.to_string() + " and " + other->device.to_string())
              .c_str());
    }
  }
}

Framework framework_of(nb::handle object) {
  nb::handle type = object.type();
  nb::object module = nb::getattr(type, "__module__", nb::none());
  if (!nb::isinstance<nb::str>(module)) return Framework::kOther;
  const char* name = nb::borrow<nb::str>(module).c_str();
  if (std::strncmp(name, "numpy", 5) == 0) return Framework::kNumpy;
  if (std::strncmp(name, "torch", 5) == 0) return Framework::kTorch;
  if (std::strncmp(name, "cupy", 4) == 0) return Framework::kCupy;
  if (std::strncmp(name, "jax", 3) == 0) return Framework::kJax;
  return Framework::kOther;
}

StreamHandle resolve_stream(nb::handle stream, const Input& like) {
  if (!like.device.is_cuda()) return nullptr;
  auto handle_of = [](std::intptr_t value) { return reinterpret_cast<StreamHandle>(value); };
  if (stream.is_none()) {
    switch (framework_of(like.object)) {
      case Framework::kTorch: {
        // torch._C._cuda_getCurrentRawStream(index) is the handle itself (what Triton reads); older torch
        // versions without it go through torch.cuda.current_stream(index).cuda_stream.
        static nb::object* raw = nullptr;
        static nb::object* current = nullptr;
        if (raw == nullptr && current == nullptr) {
          nb::module_ c = nb::module_::import_("torch._C");
          if (nb::hasattr(c, "_cuda_getCurrentRawStream")) {
            raw = new nb::object(c.attr("_cuda_getCurrentRawStream"));
          } else {
            current = new nb::object(nb::module_::import_("torch.cuda").attr("current_stream"));
          }
        }
        if (raw != nullptr) return handle_of(nb::cast<std::intptr_t>((*raw)(like.device.index())));
        return handle_of(nb::cast<std::intptr_t>((*current)(like.device.index()).attr("cuda_stream")));
      }
      case Framework::kCupy: {
        static nb::object* current = new nb::object(nb::module_::import_("cupy.cuda").attr("get_current_stream"));
        return handle_of(nb::cast<std::intptr_t>((*current)(like.device.index()).attr("ptr")));  // the array's GPU
      }
      default:
        return nullptr;
    }
  }
  if (nb::isinstance<nb::int_>(stream)) return handle_of(nb::cast<std::intptr_t>(stream));
  if (nb::hasattr(stream, "__cuda_stream__")) {
    nb::object pair = stream.attr("__cuda_stream__")();
    return handle_of(nb::cast<std::intptr_t>(pair[1]));
  }
  if (nb::hasattr(stream, "cuda_stream")) return handle_of(nb::cast<std::intptr_t>(stream.attr("cuda_stream")));
  if (nb::hasattr(stream, "ptr")) return handle_of(nb::cast<std::intptr_t>(stream.attr("ptr")));
  throw InvalidArgument(("stream: expected None, an int handle, or a stream object (torch.cuda.Stream, "
                         "cupy.cuda.Stream, anything with __cuda_stream__), got " +
                         std::string(nb::type_name(stream.type()).c_str()))
                            .c_str());
}

Output allocate(DType dtype, const std::vector<std::int64_t>& shape, const Device& device, StreamHandle stream) {
  std::size_t count = 1;
  for (std::int64_t e : shape) count *= static_cast<std::size_t>(e);
  const std::size_t bytes = count * bytes_of(dtype);
  if (device.is_cuda()) {
    ScopedDevice scoped(device.index());
    void* data = bytes ? detail::device_allocate(bytes, stream) : nullptr;
    auto* allocation = new DeviceAllocation{data, bytes, stream, device.index()};
    nb::capsule owner(allocation, [](void* p) noexcept {
      auto* a = static_cast<DeviceAllocation*>(p);
      if (a->data) {
        try {
          ScopedDevice scoped(a->device);
          detail::device_release(a->data, a->bytes, a->stream);
        } catch (...) {
        }
      }
      delete a;
    });
    Output out = make_output(data, owner, dtype, shape, device);
    out.stream = stream;
    return out;
  }
  void* data = ::operator new(bytes ? bytes : 1);
  nb::capsule owner(data, [](void* p) noexcept { ::operator delete(p); });
  return make_output(data, owner, dtype, shape, device);
}

namespace {
template <typename T>
constexpr DType dtype_for();
template <>
constexpr DType dtype_for<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType dtype_for<double>() {
  return DType::kFloat64;
}
template <>
constexpr DType dtype_for<std::int32_t>() {
  return DType::kInt32;
}
template <>
constexpr DType dtype_for<std::int64_t>() {
  return DType::kInt64;
}
template <>
constexpr DType dtype_for<std::uint8_t>() {
  return DType::kUint8;
}
}  // namespace

template <typename T>
Output adopt(std::vector<T>&& values, const std::vector<std::int64_t>& shape) {
  auto* held = new std::vector<T>(std::move(values));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return make_output(held->data(), owner, dtype_for<T>(), shape, Device());
}
template Output adopt(std::vector<float>&&, const std::vector<std::int64_t>&);
template Output adopt(std::vector<double>&&, const std::vector<std::int64_t>&);
template Output adopt(std::vector<std::int32_t>&&, const std::vector<std::int64_t>&);
template Output adopt(std::vector<std::int64_t>&&, const std::vector<std::int64_t>&);
template Output adopt(std::vector<std::uint8_t>&&, const std::vector<std::int64_t>&);

nb::object export_array(const Output& out, Framework framework) {
  switch (framework) {
    case Framework::kNumpy:
      return nb::ndarray<nb::numpy>(out.array).cast();
    case Framework::kTorch:
      return nb::ndarray<nb::pytorch>(out.array).cast();
    case Framework::kCupy:
      return nb::ndarray<nb::cupy>(out.array).cast();
    case Framework::kJax:
      // JAX does not order its work after a stream it is not told about (nanobind's DLPack export names none):
      // the result is complete before JAX sees it.
      if (out.array.device_type() == nb::device::cuda::value) {
        nb::gil_scoped_release release;
        synchronize(out.stream);
      }
      return nb::ndarray<nb::jax>(out.array).cast();
    case Framework::kOther:
      break;
  }
  // Another DLPack producer: NumPy for host memory, nanobind's own DLPack-capable array for device memory.
  if (out.array.device_type() == nb::device::cpu::value) return nb::ndarray<nb::numpy>(out.array).cast();
  return nb::ndarray<>(out.array).cast();
}

Output output_into(nb::handle object, const char* name, DType dtype, const std::vector<std::int64_t>& shape,
                   const Device& device) {
  const Input in = import(object, name, {dtype});
  if (in.shape != shape) {
    reject(name, "expected shape " + describe_shape(shape) + " (the result's), got " + describe_shape(in.shape));
  }
  if (in.device != device) {
    reject(name, "expected an array on " + device.to_string() + ", got one on " + in.device.to_string());
  }
  Output out;
  if (framework_of(object) != Framework::kTorch) {  // a torch tensor is writable; others say so through DLPack
    nb::ndarray<> writable;
    if (!nb::try_cast<nb::ndarray<>>(object, writable, /*convert=*/false)) reject(name, "expected a writable array");
  }
  out.data = const_cast<void*>(in.data);
  out.dtype = dtype;
  out.given = object;
  return out;
}

Output destination(nb::handle out, const char* name, DType dtype, const std::vector<std::int64_t>& shape,
                   const Device& device, StreamHandle stream) {
  if (out.is_none()) return allocate(dtype, shape, device, stream);
  return output_into(out, name, dtype, shape, device);
}

nb::object result(const Output& out, Framework framework) {
  if (out.given.is_valid()) return nb::borrow(out.given);
  return export_array(out, framework);
}

}  // namespace s3d::python
