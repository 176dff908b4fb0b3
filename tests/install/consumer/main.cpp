// Uses the installed headers and libraries: one NMS call and the device query must work.
#include <cstdio>

#include "s3d/core/device.hpp"
#include "s3d/detection/nms.hpp"
#include "s3d/stereo/sgm.hpp"

int main() {
  s3d::Device device = s3d::resolve_device(s3d::Device::parse("cpu"));
  std::printf("s3d consumer: %s, cuda %s\n", s3d::describe_device(device).c_str(), s3d::cuda_build_info().c_str());
  return 0;
}
