#pragma once
// Internal: floats as signed ints that order like the floats, so that integer atomicMin / atomicMax reduce
// coordinates (the point bounds of the neighbour grid and of voxelize_device). -0 orders below +0; NaN has no
// place (callers leave non-finite values out).
#include <cstring>

#include "s3d/core/host_device.hpp"

namespace s3d::points::detail {

S3D_HOST_DEVICE S3D_FORCEINLINE int ordered_float(float f) {
  int i;
  memcpy(&i, &f, sizeof i);
  return i >= 0 ? i : i ^ 0x7fffffff;
}

S3D_HOST_DEVICE S3D_FORCEINLINE float from_ordered_float(int o) {
  const int i = o >= 0 ? o : o ^ 0x7fffffff;
  float f;
  memcpy(&f, &i, sizeof f);
  return f;
}

}  // namespace s3d::points::detail
