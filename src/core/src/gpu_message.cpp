// The one line a user reads when a GPU is not covered by the build (compiled with or without CUDA).
#include <string>

#include "s3d/core/device.hpp"

namespace s3d::detail {

std::string unsupported_gpu_message(const std::string& gpu_name, int major, int minor,
                                    const std::string& compiled_archs) {
  const std::string arch = std::to_string(major * 10 + minor);
  return gpu_name + " is sm_" + arch + ", but this build has CUDA kernels only for " + compiled_archs +
         ": rebuild with -DCMAKE_CUDA_ARCHITECTURES=\"" + arch + "\" (or add " + arch +
         " to the list; see README.md, Building), or run with --device cpu";
}

}  // namespace s3d::detail
