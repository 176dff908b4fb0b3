#pragma once
// The one place an engine's constructor turns a requested Device into a backend: every engine (SgmEngine,
// NmsEngine, FpsEngine, NeighborEngine, VoxelEngine, RulebookEngine, FusionEngine) calls select_backend with its
// two factories. No CUDA here.
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "s3d/core/config.hpp"
#include "s3d/core/device.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"

/// The CUDA factory argument of select_backend: the expression in a CUDA build, nullptr otherwise (so that a
/// CPU-only build never references the CUDA factory's symbol).
#if S3D_WITH_CUDA
#define S3D_CUDA_FACTORY(...) __VA_ARGS__
#else
#define S3D_CUDA_FACTORY(...) nullptr
#endif

namespace s3d {

/// Resolves `device` (resolve_device) and returns make_cpu(resolved) or make_cuda(resolved). The CUDA
/// factory runs with the resolved device current; the caller's current device is restored afterwards.
/// @throws DeviceUnavailable naming `engine` when CUDA is asked for and not built, or not usable.
template <typename Impl, typename MakeCpu, typename MakeCuda>
std::unique_ptr<Impl> select_backend(const Device& device, const char* engine, MakeCpu&& make_cpu,
                                     MakeCuda&& make_cuda) {
  // resolve_device selects the device it checks; the engine gives the caller's current device back.
  std::optional<ScopedDevice> callers_device;
  const int target = device.is_auto() ? 0 : device.index();
  if (!device.is_cpu() && target >= 0 && target < cuda_device_count()) callers_device.emplace(target);
  const Device resolved = resolve_device(device);
  if (!resolved.is_cuda()) return make_cpu(resolved);
  if constexpr (std::is_same_v<std::decay_t<MakeCuda>, std::nullptr_t>)
    throw DeviceUnavailable(std::string(engine) + ": CUDA is not built into this s3d");
  else
    return make_cuda(resolved);
}

}  // namespace s3d
