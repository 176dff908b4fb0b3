// Tracking, CPU: depth mask, bilateral filter, pyrDown, vertex/normal maps and the reference-map helpers,
// one OpenMP loop over rows per stage around the shared per-pixel functions.
#include <algorithm>
#include <cstdint>
#include <new>
#include <vector>

#include <omp.h>

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

// bilateral_pixel, reorganised for the CPU without changing a bit:
// - Each unordered pair of pixels within the window shares one range weight: pixel p's tap toward q and q's tap
//   toward p have diff = d(q) - d(p) and d(p) - d(q), whose squares are the same float, so exp_neg gives the
//   same value. It is computed once, for the "forward" tap of the pair (dy > 0, or dy = 0 and dx > 0), and kept
//   in a ring of rows until the last output row that needs it (half the exp_neg calls).
// - The innermost loops run over the pixels of a row (vectorised). Every pixel still adds its taps in the
//   window's raster order; a tap that bilateral_pixel skips (outside the image, invalid neighbour) adds +0
//   here, which leaves a sum that is >= +0 unchanged.

/// Where the forward taps' exp_neg values of one source row lie: tap (dx, dy) at [forward_tap(...)][x].
struct ForwardTaps {
  int radius, width;
  /// dy = 0: dx = 1 .. radius -> 0 .. radius - 1; dy = 1 .. radius: dx = -radius .. radius after those.
  int index(int dx, int dy) const { return dy == 0 ? dx - 1 : radius + (dy - 1) * (2 * radius + 1) + (dx + radius); }
  int count() const { return radius + radius * (2 * radius + 1); }
};

/// The forward taps' exp_neg values of source row r (the pair (x, r) - (x + dx, r + dy)) into `row_taps`.
S3D_ALWAYS_INLINE void forward_exp_row(const float* src, int w, int h, int r, const ForwardTaps& taps,
                                       float inv_two_sigma_d2, float* __restrict row_taps) {
  const int radius = taps.radius;
  const float* centre = src + static_cast<std::ptrdiff_t>(r) * w;
  for (int dy = 0; dy <= radius && r + dy < h; ++dy) {
    const float* row = src + static_cast<std::ptrdiff_t>(r + dy) * w;
    for (int dx = dy == 0 ? 1 : -radius; dx <= radius; ++dx) {
      float* out = row_taps + static_cast<std::ptrdiff_t>(taps.index(dx, dy)) * w;
      const int x0 = std::max(0, -dx), x1 = std::min(w, w - dx);
      for (int x = x0; x < x1; ++x) {
        const float diff = row[x + dx] - centre[x];
        out[x] = exp_neg(-(diff * diff) * inv_two_sigma_d2);
      }
    }
  }
}

/// Output row y from the ring (`ring(r)`: row r's forward taps, for r in y - radius .. y).
template <typename Ring>
S3D_ALWAYS_INLINE void bilateral_row_from_taps(const float* src, int w, int h, int y, const ForwardTaps& taps,
                                               const float* space, float inv_two_sigma_d2, const Ring& ring,
                                               float* __restrict sum, float* __restrict weights,
                                               float* __restrict out) {
  const int radius = taps.radius, side = 2 * radius + 1;
  const float* centre = src + static_cast<std::ptrdiff_t>(y) * w;
  for (int x = 0; x < w; ++x) sum[x] = weights[x] = 0.0f;
  for (int dy = -radius; dy <= radius; ++dy) {
    const int yy = y + dy;
    if (yy < 0 || yy >= h) continue;
    const float* row = src + static_cast<std::ptrdiff_t>(yy) * w;
    for (int dx = -radius; dx <= radius; ++dx) {
      const float sw = space[(dy + radius) * side + (dx + radius)];
      const int x0 = std::max(0, -dx), x1 = std::min(w, w - dx);
      if (dx == 0 && dy == 0) {
        for (int x = x0; x < x1; ++x) {
          const float d = row[x], d0 = centre[x];
          const float diff = d - d0;
          const float e = sw * exp_neg(-(diff * diff) * inv_two_sigma_d2);
          const float wgt = d == 0.0f ? 0.0f : e;
          sum[x] = sum[x] + (d * wgt);
          weights[x] = weights[x] + wgt;
        }
        continue;
      }
      // forward: this pixel's own value, at x; backward: the partner's (row y + dy, column x + dx) for (-dx, -dy)
      const bool forward = dy > 0 || (dy == 0 && dx > 0);
      const float* ev = forward ? ring(y) + static_cast<std::ptrdiff_t>(taps.index(dx, dy)) * w
                                : ring(yy) + static_cast<std::ptrdiff_t>(taps.index(-dx, -dy)) * w;
      const int shift = forward ? 0 : dx;
      for (int x = x0; x < x1; ++x) {
        const float d = row[x + dx];
        const float e = sw * ev[x + shift];
        const float wgt = d == 0.0f ? 0.0f : e;
        sum[x] = sum[x] + (d * wgt);
        weights[x] = weights[x] + wgt;
      }
    }
  }
  for (int x = 0; x < w; ++x) out[x] = centre[x] == 0.0f ? 0.0f : div_rn(sum[x], weights[x]);
}

/// Output rows [y_begin, y_end): the forward taps of rows y_begin - radius .. y_end - 1 in a ring of radius + 1
/// rows (`scratch`: ring, then sum and weights).
S3D_ALWAYS_INLINE void bilateral_rows_body(const float* src, int w, int h, int y_begin, int y_end, int radius,
                                           const float* space, float inv_two_sigma_d2, float* scratch, float* dst) {
  const ForwardTaps taps{radius, w};
  const std::ptrdiff_t row_size = static_cast<std::ptrdiff_t>(taps.count()) * w;
  float* sum = scratch + (radius + 1) * row_size;
  float* weights = sum + w;
  const auto ring = [&](int r) { return scratch + (r % (radius + 1)) * row_size; };
  for (int r = std::max(0, y_begin - radius); r < y_begin; ++r)
    forward_exp_row(src, w, h, r, taps, inv_two_sigma_d2, ring(r));
  for (int y = y_begin; y < y_end; ++y) {
    forward_exp_row(src, w, h, y, taps, inv_two_sigma_d2, ring(y));
    bilateral_row_from_taps(src, w, h, y, taps, space, inv_two_sigma_d2, ring, sum, weights,
                            dst + static_cast<std::ptrdiff_t>(y) * w);
  }
}

void bilateral_rows_baseline(const float* src, int w, int h, int y_begin, int y_end, int radius, const float* space,
                             float inv, float* scratch, float* dst) {
  bilateral_rows_body(src, w, h, y_begin, y_end, radius, space, inv, scratch, dst);
}

S3D_TARGET_AVX2 void bilateral_rows_avx2(const float* src, int w, int h, int y_begin, int y_end, int radius,
                                         const float* space, float inv, float* scratch, float* dst) {
  bilateral_rows_body(src, w, h, y_begin, y_end, radius, space, inv, scratch, dst);
}

S3D_TARGET_AVX512 void bilateral_rows_avx512(const float* src, int w, int h, int y_begin, int y_end, int radius,
                                             const float* space, float inv, float* scratch, float* dst) {
  bilateral_rows_body(src, w, h, y_begin, y_end, radius, space, inv, scratch, dst);
}

}  // namespace

void bilateral_cpu(const float* src, int w, int h, int radius, const float* space, float inv_two_sigma_d2, float* dst) {
  const auto rows = cpu_avx512_enabled() ? bilateral_rows_avx512
                    : cpu_avx2_enabled() ? bilateral_rows_avx2
                                         : bilateral_rows_baseline;
  const ForwardTaps taps{radius, w};
  const std::size_t scratch_size =
      static_cast<std::size_t>(radius + 1) * taps.count() * w + 2 * static_cast<std::size_t>(w);
  bool out_of_memory = false;
#pragma omp parallel
  {
    // Each thread one block of rows (the ring's first rows computed again at each block's start); the scratch
    // stays with the thread from frame to frame ((radius + 1) * (2 radius^2 + 2 radius) * w floats: 1.5 MB at
    // 640 pixels and KinFu's radius 6).
    thread_local std::vector<float> scratch;
    const int threads = omp_get_num_threads(), id = omp_get_thread_num();
    const int y_begin = static_cast<int>(static_cast<long long>(h) * id / threads);
    const int y_end = static_cast<int>(static_cast<long long>(h) * (id + 1) / threads);
    bool ready = y_begin < y_end;
    if (ready && scratch.size() < scratch_size) {
      try {  // no exception may leave an OpenMP region
        scratch.resize(scratch_size);
      } catch (const std::bad_alloc&) {
        ready = false;
#pragma omp atomic write
        out_of_memory = true;
      }
    }
    if (ready) rows(src, w, h, y_begin, y_end, radius, space, inv_two_sigma_d2, scratch.data(), dst);
  }
  if (out_of_memory) throw std::bad_alloc();
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

void halve_grey_cpu(const float* src, int sw, int sh, float* dst) {
  const int dw = level_size(sw, 1), dh = level_size(sh, 1);
  for (int y = 0; y < dh; ++y)
    for (int x = 0; x < dw; ++x) dst[static_cast<std::ptrdiff_t>(y) * dw + x] = halve_grey_pixel(src, sw, sh, x, y);
}

void grey_gradient_cpu(const float* grey, int w, int h, float* gx, float* gy) {
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) grey_gradient_pixel(grey, w, h, x, y, gx, gy);
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
