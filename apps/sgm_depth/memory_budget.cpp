#include "memory_budget.hpp"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "s3d/core/errors.hpp"
#include "s3d/stereo/sgm_memory.hpp"

namespace s3d::sgm_depth {
namespace {

// A container's memory limit (cgroup v2, then v1) is what this process can ever get when it is below RAM.
std::size_t cgroup_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    unsigned long long v = 0;
    if (in >> v && v > 0) return static_cast<std::size_t>(v);
  }
  return std::numeric_limits<std::size_t>::max();
}

std::size_t physical_ram() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<std::size_t>::max();
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
}

}  // namespace

std::size_t parse_memory_size(const std::string& text) {
  auto bad = [&]() -> std::size_t {
    throw InvalidArgument("--max-memory: '" + text + "' is not a positive size (e.g. 512M, 8G, 1.5T, or bytes)");
  };
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return bad();
  }
  if (used == 0 || !std::isdigit(static_cast<unsigned char>(text[0]))) return bad();  // no nan, inf, sign
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1.0;
  if (!unit.empty() && unit != "B") {
    const std::string prefixes = "KMGT";
    const std::size_t k = prefixes.find(unit[0]);
    const std::string rest = unit.substr(1);
    if (k == std::string::npos || !(rest.empty() || rest == "B" || rest == "IB")) return bad();
    scale = std::pow(1024.0, static_cast<double>(k + 1));
  }
  const double bytes = v * scale;
  if (!(bytes >= 1.0) || bytes > 1e18) return bad();
  return static_cast<std::size_t>(bytes);
}

std::string memory_text(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

MemoryBudget::MemoryBudget(const Device& device, std::size_t max_memory) : device_(device) {
  const std::size_t ram = physical_ram(), cgroup = cgroup_limit();
  host_limit_ = std::min(ram, cgroup);
  host_source_ = cgroup < ram ? "this container's memory limit" : "this machine's RAM";
  if (device.is_cuda()) {
    device_limit_ = device_memory_total(device);
    device_source_ = "the GPU memory of " + device.to_string();
  }
  if (max_memory > 0) {
    (device.is_cuda() ? device_limit_ : host_limit_) = max_memory;
    (device.is_cuda() ? device_source_ : host_source_) = "--max-memory";
  }
}

void MemoryBudget::check(const std::string& name, const stereo::SgmParams& params, int width, int height,
                         int depth) const {
  const stereo::SgmMemory need = stereo::sgm_pipeline_memory(device_, params, width, height, depth);
  auto refuse = [&](std::size_t bytes, const char* what, std::size_t limit, const std::string& source) {
    throw DataError(name + ": " + std::to_string(width) + "x" + std::to_string(height) + " at -D " +
                    std::to_string(params.disparities) + " needs " + memory_text(bytes) + " of " + what +
                    " to match, more than the " + memory_text(limit) + " of " + source);
  };
  if (device_.is_cuda() && need.device > device_limit_)
    refuse(need.device, "GPU memory", device_limit_, device_source_);
  if (need.host > host_limit_) refuse(need.host, "memory", host_limit_, host_source_);
}

}  // namespace s3d::sgm_depth
