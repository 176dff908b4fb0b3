#include "s3d/core/device.hpp"

#include <algorithm>
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

std::vector<Device> parse_devices(std::string_view text) {
  const auto invalid = [&] {
    return InvalidArgument("invalid device '" + std::string(text) +
                           "': expected auto, cpu, cuda, cuda:N, cuda:all or a list cuda:N,M");
  };
  if (text == "cuda:all") {
    std::vector<Device> all;
    for (int i = 0; i < cuda_device_count(); ++i) all.emplace_back(Device::Kind::kCuda, i);
    if (all.empty()) all.emplace_back(Device::Kind::kCuda, 0);
    return all;
  }
  if (text.find(',') == std::string_view::npos) return {Device::parse(text)};
  if (text.substr(0, 5) != "cuda:") throw invalid();
  std::vector<Device> list;
  std::string_view rest = text.substr(5);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view index = rest.substr(0, comma);
    if (index.empty()) throw invalid();
    if (!std::all_of(index.begin(), index.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw invalid();
    const Device d = Device::parse("cuda:" + std::string(index));
    if (std::find(list.begin(), list.end(), d) != list.end())
      throw InvalidArgument("invalid device '" + std::string(text) + "': " + d.to_string() + " is named twice");
    list.push_back(d);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return list;
}

std::vector<Device> resolve_devices(const std::vector<Device>& requested, bool* fell_back_to_cpu) {
  if (requested.empty()) throw InvalidArgument("no device requested");
  std::vector<Device> resolved;
  for (auto it = requested.rbegin(); it != requested.rend(); ++it)  // the first resolved last: left current
    resolved.insert(resolved.begin(), resolve_device(*it, fell_back_to_cpu));
  return resolved;
}

std::string to_string(const std::vector<Device>& devices) {
  if (devices.size() == 1) return devices.front().to_string();
  std::string text = "cuda:";
  for (std::size_t i = 0; i < devices.size(); ++i) text += (i ? "," : "") + std::to_string(devices[i].index());
  return text;
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
