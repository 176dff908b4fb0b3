// Tracking, CPU: depth mask, bilateral filter, pyrDown, vertex/normal maps and the reference-map helpers,
// one OpenMP loop over rows per stage around the shared per-pixel functions.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "s3d/core/cpu_dispatch.hpp"
#include "tracking_cpu.hpp"

namespace s3d::fusion::detail {

std::int64_t mask_depth_cpu(const float* src, std::ptrdiff_t pitch, int w, int h, float min_depth, float max_depth,
                            float* dst) {
  std::int64_t valid = 0;
#pragma omp parallel for schedule(static) reduction(+ : valid)
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const float d = mask_depth(src[y * pitch + x], min_depth, max_depth);
      dst[static_cast<std::ptrdiff_t>(y) * w + x] = d;
      valid += d != 0.0f;
    }
  return valid;
}

namespace {

// bilateral_pixel's sums for output row y, reorganised so that the innermost loop runs over the pixels of the
// row (vectorised): every pixel still adds its taps in the window's raster order, and a tap that
// bilateral_pixel skips (outside the image, invalid neighbour) adds +0 here, which leaves a sum that is >= +0
// unchanged. Same bits.
S3D_ALWAYS_INLINE void bilateral_row_body(const float* src, int w, int h, int y, int radius, const float* space,
                                          float inv_two_sigma_d2, float* __restrict sum, float* __restrict weights,
                                          float* __restrict out) {
  const int side = 2 * radius + 1;
  const float* centre = src + static_cast<std::ptrdiff_t>(y) * w;
  for (int x = 0; x < w; ++x) sum[x] = weights[x] = 0.0f;
  for (int dy = -radius; dy <= radius; ++dy) {
    const int yy = y + dy;
    if (yy < 0 || yy >= h) continue;
    const float* row = src + static_cast<std::ptrdiff_t>(yy) * w;
    for (int dx = -radius; dx <= radius; ++dx) {
      const float sw = space[(dy + radius) * side + (dx + radius)];
      const int x0 = std::max(0, -dx), x1 = std::min(w, w - dx);
      for (int x = x0; x < x1; ++x) {
        const float d = row[x + dx], d0 = centre[x];
        const float diff = d - d0;
        const float e = sw * exp_neg(-(diff * diff) * inv_two_sigma_d2);
        const float wgt = d == 0.0f ? 0.0f : e;
        sum[x] = sum[x] + (d * wgt);
        weights[x] = weights[x] + wgt;
      }
    }
  }
  for (int x = 0; x < w; ++x) out[x] = centre[x] == 0.0f ? 0.0f : div_rn(sum[x], weights[x]);
}

void bilateral_row_baseline(const float* src, int w, int h, int y, int radius, const float* space, float inv,
                            float* sum, float* weights, float* out) {
  bilateral_row_body(src, w, h, y, radius, space, inv, sum, weights, out);
}

S3D_TARGET_AVX2 void bilateral_row_avx2(const float* src, int w, int h, int y, int radius, const float* space,
                                        float inv, float* sum, float* weights, float* out) {
  bilateral_row_body(src, w, h, y, radius, space, inv, sum, weights, out);
}

}  // namespace

void bilateral_cpu(const float* src, int w, int h, int radius, const float* space, float inv_two_sigma_d2, float* dst) {
  const auto row = cpu_avx2_enabled() ? bilateral_row_avx2 : bilateral_row_baseline;
#pragma omp parallel
  {
    std::vector<float> sum(w), weights(w);
#pragma omp for schedule(static)
    for (int y = 0; y < h; ++y)
      row(src, w, h, y, radius, space, inv_two_sigma_d2, sum.data(), weights.data(),
          dst + static_cast<std::ptrdiff_t>(y) * w);
  }
}

void pyrdown_cpu(const float* src, int sw, int sh, float gate, float* dst) {
  const int dw = level_size(sw, 1), dh = level_size(sh, 1);
#pragma omp parallel for schedule(static)
  for (int y = 0; y < dh; ++y)
    for (int x = 0; x < dw; ++x) dst[static_cast<std::ptrdiff_t>(y) * dw + x] = pyrdown_pixel(src, sw, sh, x, y, gate);
}

void vertex_normal_maps_cpu(const float* depth, int w, int h, const Pinhole& camera, Vec3f* vertices, Vec3f* normals) {
#pragma omp parallel for schedule(static)
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(y) * w + x;
      vertices[i] = back_project(depth[i], x, y, camera);
      normals[i] = normal_at(depth, w, h, x, y, camera);
    }
}

void halve_maps_cpu(const Vec3f* sv, const Vec3f* sn, int sw, int sh, Vec3f* dv, Vec3f* dn) {
  const int dw = level_size(sw, 1), dh = level_size(sh, 1);
#pragma omp parallel for schedule(static)
  for (int y = 0; y < dh; ++y)
    for (int x = 0; x < dw; ++x) halve_maps_pixel(sv, sn, sw, dv, dn, dw, x, y);
}

void transform_maps_cpu(const Vec3f* sv, const Vec3f* sn, int pixels, const Rigid& t, Vec3f* dv, Vec3f* dn) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < pixels; ++i) {
    const bool ok = is_valid(sv[i]) && is_valid(sn[i]);
    dv[i] = ok ? t.apply(sv[i]) : invalid_vec3();
    dn[i] = ok ? t.rotate(sn[i]) : invalid_vec3();
  }
}

}  // namespace s3d::fusion::detail
