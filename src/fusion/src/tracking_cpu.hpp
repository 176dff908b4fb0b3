#pragma once
// Internal: the CPU stages of tracking (the oracle), each a loop over the shared per-pixel math of
// tracking_math.hpp. Dense host arrays, pitch = width.
#include <vector>

#include "tracking_math.hpp"

namespace s3d::fusion::detail {

/// mask_depth over `w` x `h` pixels of `src` (row pitch `pitch`) into `dst`; returns the valid count.
std::int64_t mask_depth_cpu(const float* src, std::ptrdiff_t pitch, int w, int h, float min_depth, float max_depth,
                            float* dst);
void bilateral_cpu(const float* src, int w, int h, int radius, const float* space, float inv_two_sigma_d2, float* dst);
/// `dst` is level_size(sw) x level_size(sh).
void pyrdown_cpu(const float* src, int sw, int sh, float gate, float* dst);
void vertex_normal_maps_cpu(const float* depth, int w, int h, const Pinhole& camera, Vec3f* vertices, Vec3f* normals);
void halve_maps_cpu(const Vec3f* sv, const Vec3f* sn, int sw, int sh, Vec3f* dv, Vec3f* dn);
void transform_maps_cpu(const Vec3f* sv, const Vec3f* sn, int pixels, const Rigid& t, Vec3f* dv, Vec3f* dn);
/// A grey level of level_size(sw) x level_size(sh) from the level below (halve_grey_pixel).
void halve_grey_cpu(const float* src, int sw, int sh, float* dst);
/// grey_gradient_pixel over the image.
void grey_gradient_cpu(const float* grey, int w, int h, float* gx, float* gy);
/// The ICP reduction with the tree of tracking_math.hpp; `out` receives kIcpTerms doubles.
void icp_reduce_cpu(const IcpInputs& in, double* out);

}  // namespace s3d::fusion::detail
