#pragma once
// A run-time compute device. It flows from the CLI (`--device auto|cpu|cuda|cuda:N`) down to each op's
// dispatcher, the only place where a backend is chosen.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace s3d {

class Device {
 public:
  enum class Kind {
    kAuto,  ///< first visible CUDA device, else the CPU (with one warning from the caller)
    kCpu,   ///< the CPU backends (OpenMP-parallel)
    kCuda,  ///< a CUDA device; `index()` is relative to CUDA_VISIBLE_DEVICES
  };

  /// The CPU device.
  Device() = default;
  Device(Kind kind, int index = 0) : kind_(kind), index_(index) {}

  /// Parses `auto`, `cpu`, `cuda` (= `cuda:0`) or `cuda:N`.
  /// @throws InvalidArgument for anything else.
  static Device parse(std::string_view text);

  Kind kind() const { return kind_; }
  int index() const { return index_; }
  bool is_cpu() const { return kind_ == Kind::kCpu; }
  bool is_cuda() const { return kind_ == Kind::kCuda; }
  bool is_auto() const { return kind_ == Kind::kAuto; }

  /// `cpu`, `cuda:N` or `auto`.
  std::string to_string() const;

  friend bool operator==(const Device& a, const Device& b) {
    return a.kind_ == b.kind_ && (a.kind_ != Kind::kCuda || a.index_ == b.index_);
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }

 private:
  Kind kind_ = Kind::kCpu;
  int index_ = 0;
};

/// True when this build has the CUDA backends (S3D_WITH_CUDA).
bool cuda_built();

/// Number of CUDA devices visible to this process (0 without CUDA, a driver, or a GPU). Never throws.
int cuda_device_count();

/// The calling thread's current CUDA device (what ScopedDevice saves and restores); -1 without CUDA or
/// without a visible device. Never throws.
int current_cuda_device();

/// Turns a requested device into a concrete one.
/// - `auto`: `cuda:0` when a GPU is visible, else `cpu`; `*fell_back_to_cpu` (if given) says which.
/// - `cuda:N`: checked strictly; selects it as the calling thread's current CUDA device.
/// @throws DeviceUnavailable when CUDA is not built or device N is not visible.
Device resolve_device(const Device& requested, bool* fell_back_to_cpu = nullptr);

/// Parses a device list: what Device::parse takes, `cuda:all` (every visible CUDA device; `cuda:0` when none is
/// visible, which resolve_devices then refuses) or `cuda:N,M,...` (each index once).
/// @throws InvalidArgument for anything else.
std::vector<Device> parse_devices(std::string_view text);

/// resolve_device of each device of a list, in order; the first is left the calling thread's current device.
/// @throws DeviceUnavailable as resolve_device.
std::vector<Device> resolve_devices(const std::vector<Device>& requested, bool* fell_back_to_cpu = nullptr);

/// `cuda:0,1` for a list of CUDA devices, else the one device's to_string().
std::string to_string(const std::vector<Device>& devices);

/// One line describing the device, e.g. `NVIDIA H200 (sm_90, 132 SMs, 139 GiB)` or `CPU (16 threads)`.
std::string describe_device(const Device& device);

/// Total memory of GPU `device` (cudaMemGetInfo's total, bytes): the most one process could ever get there.
/// @throws DeviceUnavailable for a non-CUDA device or in a build without CUDA; CudaError.
std::size_t device_memory_total(const Device& device);

/// `on (runtime 13.0, archs sm_75 sm_90, PTX compute_90)`: the CUDA runtime version and the compiled
/// architectures; `off` without CUDA.
std::string cuda_build_info();

namespace detail {
/// The one-line explanation for a GPU (`gpu_name`, compute capability major.minor) that none of the
/// `compiled_archs` can run, with the rebuild command.
std::string unsupported_gpu_message(const std::string& gpu_name, int major, int minor,
                                    const std::string& compiled_archs);
/// Throws DeviceUnavailable (unsupported_gpu_message) when the current GPU has no image of this build's
/// kernels (probed with a trivial kernel of s3d::core, built for the same architectures as every library).
/// Called by resolve_device. @throws DeviceUnavailable, CudaError.
void require_kernel_image();
/// The same check for a given `__global__` function (a kernel of another translation unit, whose
/// architectures may differ). @throws DeviceUnavailable, CudaError.
void require_kernel_image(const void* kernel);
/// True for the CUDA statuses that mean "no usable kernel image for this GPU" (cudaError_t as int).
bool is_kernel_image_error(int status);
/// unsupported_gpu_message for the current device.
std::string current_gpu_unsupported_message();
}  // namespace detail

}  // namespace s3d
