// The extension module s3d._s3d: s3d's libraries on DLPack arrays. It links no array framework (no torch, no
// NumPy C API): one build serves every version of each (docs/PYTHON.md).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "engines.hpp"
#include "s3d/core/device.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_points(nb::module_& m);
void bind_voxels(nb::module_& m);
void bind_detection(nb::module_& m);
void bind_stereo(nb::module_& m);
void bind_fusion(nb::module_& m);

void require_engine_device(const Device& engine, const Device& array, const char* name) {
  if (engine != array) {
    throw InvalidArgument((std::string(name) + ": expected an array on the engine's device (" + engine.to_string() +
                           "), got one on " + array.to_string())
                              .c_str());
  }
}

Device parse_device(const std::string& text) { return resolve_device(Device::parse(text)); }

}  // namespace s3d::python

NB_MODULE(_s3d, m) {
  namespace nb = nanobind;
  using namespace s3d::python;
  m.doc() = "s3d: stereo and 3D perception kernels on GPU and CPU (docs/PYTHON.md)";
  bind_errors(m);
  bind_points(m);
  bind_voxels(m);
  bind_detection(m);
  bind_stereo(m);
  bind_fusion(m);
  m.def("cuda_built", &s3d::cuda_built, "True when this build has the CUDA backends.");
  m.def("cuda_device_count", &s3d::cuda_device_count, "CUDA devices visible to this process.");
  m.def("cuda_build_info", &s3d::cuda_build_info, "The CUDA runtime and the architectures compiled in.");
  m.def(
      "describe_device", [](const std::string& device) { return s3d::describe_device(parse_device(device)); },
      nb::arg("device"), "One line naming the device (GPU model, SMs, memory; or the CPU's threads).");
}
