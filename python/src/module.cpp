// The extension module s3d._s3d: s3d's libraries on DLPack arrays. It links no array framework (no torch, no
// NumPy C API): one build serves every version of each (docs/PYTHON.md).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "engines.hpp"
#include "s3d/core/device.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/scoped_device.hpp"

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

namespace {

struct LastCall {
  std::unique_ptr<Event> done;  // recorded at the end of the engine's last call
  StreamHandle stream = nullptr;
};

// One entry per engine address (cached or the caller's); an address reused by a later engine finds a completed
// event, which costs nothing to wait for.
std::unordered_map<const void*, LastCall>& last_calls() {
  static auto* table = new std::unordered_map<const void*, LastCall>();
  return *table;
}
std::mutex last_calls_mutex;

}  // namespace

void before_call(const void* engine, const Device& device, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(last_calls_mutex);
  const auto found = last_calls().find(engine);
  if (found == last_calls().end() || !found->second.done || found->second.stream == stream) return;
  ScopedDevice scoped(device.index());
  found->second.done->wait(stream);
}

void after_call(const void* engine, const Device& device, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(last_calls_mutex);
  LastCall& last = last_calls()[engine];
  ScopedDevice scoped(device.index());
  if (!last.done) last.done = std::make_unique<Event>();
  last.done->record(stream);
  last.stream = stream;
}

void finish_calls(const void* engine) {
  std::lock_guard<std::mutex> lock(last_calls_mutex);
  const auto found = last_calls().find(engine);
  if (found != last_calls().end() && found->second.done) found->second.done->synchronize();
}

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
