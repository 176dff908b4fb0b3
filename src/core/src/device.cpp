#include "s3d/core/device.hpp"

#include <cctype>
#include <string>

#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/parallel.hpp"

namespace s3d {

Device Device::parse(std::string_view text) {
  if (text == "auto") return Device(Kind::kAuto);
  if (text == "cpu") return Device(Kind::kCpu);
  if (text == "cuda") return Device(Kind::kCuda, 0);
  if (text.size() > 5 && text.substr(0, 5) == "cuda:") {
    std::string_view digits = text.substr(5);
    int index = 0;
    for (char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || index > 100000)
        throw InvalidArgument("invalid device '" + std::string(text) + "': expected auto, cpu, cuda or cuda:N");
      index = index * 10 + (c - '0');
    }
    return Device(Kind::kCuda, index);
  }
  throw InvalidArgument("invalid device '" + std::string(text) + "': expected auto, cpu, cuda or cuda:N");
}

std::string Device::to_string() const {
  switch (kind_) {
    case Kind::kAuto:
      return "auto";
    case Kind::kCpu:
      return "cpu";
    case Kind::kCuda:
      return "cuda:" + std::to_string(index_);
  }
  return "cpu";
}

bool cuda_built() { return S3D_WITH_CUDA != 0; }

#if !S3D_WITH_CUDA
int cuda_device_count() { return 0; }
int current_cuda_device() { return -1; }

Device resolve_device(const Device& requested, bool* fell_back_to_cpu) {
  if (fell_back_to_cpu) *fell_back_to_cpu = requested.is_auto();
  if (requested.is_cuda())
    throw DeviceUnavailable("device " + requested.to_string() + " requested but this build has no CUDA support");
  return Device(Device::Kind::kCpu);
}

std::string describe_device(const Device& device) {
  (void)device;
  return "CPU (" + std::to_string(cpu_threads()) + " threads)";
}

std::string cuda_build_info() { return "off"; }

std::size_t device_memory_total(const Device& device) {
  throw DeviceUnavailable("device " + device.to_string() + ": this build has no CUDA support");
}
#endif

}  // namespace s3d
