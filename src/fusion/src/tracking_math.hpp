#pragma once
// Internal: the per-pixel math of tracking (depth mask, bilateral filter, pyrDown, vertex and normal maps,
// projective association, the ICP reduction tree), written once for the CPU oracle and the CUDA kernels.
// Every float expression is spelled out in a fixed order; division and square root go through div_rn /
// sqrt_rn (IEEE round-to-nearest on both sides), exp through exp_neg (basic operations only), so both
// backends produce the same bits.
#include <cstdint>
#include <cstring>

#include "fusion_math.hpp"

namespace s3d::fusion::detail {

/// Intrinsics of one pyramid level (a plain copy of CameraIntrinsics, without Eigen, for kernels).
struct Pinhole {
  float fx, fy, cx, cy;
};

/// sigma(z) = a + b max(z - z0, 0)^2 metres (DepthNoise), and the weights' numerator `norm` (the variance at a
/// reference depth, so that weights near the camera are about 1: float sums stay in range).
struct NoiseModel {
  float a, b, z0, norm;
};

S3D_HOST_DEVICE S3D_FORCEINLINE NoiseModel kinect_noise() { return {0.0012f, 0.0019f, 0.4f, 0.0012f * 0.0012f}; }

/// Size of pyramid level `level` of a `size`-pixel axis (KinFu halves and rounds down).
S3D_HOST_DEVICE S3D_FORCEINLINE int level_size(int size, int level) { return size >> level; }

S3D_HOST_DEVICE S3D_FORCEINLINE float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

S3D_HOST_DEVICE S3D_FORCEINLINE float sqrt_rn(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

/// Round to nearest, ties to even (KinFu's __float2int_rn); `v` must be finite and well inside int range.
S3D_HOST_DEVICE S3D_FORCEINLINE int round_rn(float v) {
#if defined(__CUDA_ARCH__)
  return __float2int_rn(v);
#else
  return static_cast<int>(std::nearbyint(v));  // the default rounding mode is to nearest, ties to even
#endif
}

S3D_HOST_DEVICE S3D_FORCEINLINE float bits_to_float(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

/// e^x for x <= 0 from basic operations only (Cephes expf: Cody-Waite reduction by ln 2, degree-7
/// polynomial, Horner without FMA, 2^k from the exponent bits), so libm and CUDA give the same bits.
/// About 1 ulp; x < -87 (and NaN) gives 0.
S3D_HOST_DEVICE S3D_FORCEINLINE float exp_neg(float x) {
  // Selects rather than early returns, so that the CPU's loops over pixels vectorise.
  const bool under = !(x > -87.0f);
  x = under ? -87.0f : (x > 0.0f ? 0.0f : x);
  // floor by truncation and a correction: exact for this range, and no libm call (the CPU loops vectorise).
  const float y = (x * 1.44269504088896341f) + 0.5f;
  int ki = static_cast<int>(y);
  ki = static_cast<float>(ki) > y ? ki - 1 : ki;
  const float k = static_cast<float>(ki);
  float r = x - (k * 0.693359375f);
  r = r - (k * -2.12194440e-4f);
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = (p * r) + 1.3981999507e-3f;
  p = (p * r) + 8.3334519073e-3f;
  p = (p * r) + 4.1665795894e-2f;
  p = (p * r) + 1.6666665459e-1f;
  p = (p * r) + 5.0000001201e-1f;
  p = ((p * r2) + r) + 1.0f;
  const int e = ki + 127;  // k in [-126, 0] here
  return under ? 0.0f : p * bits_to_float(static_cast<std::uint32_t>(e) << 23);
}

/// The validity mask: 0, NaN, inf, <= min_depth and (max_depth > 0) > max_depth become 0.
S3D_HOST_DEVICE S3D_FORCEINLINE float mask_depth(float d, float min_depth, float max_depth) {
  const bool finite = d == d && d < 3.0e38f;
  const bool valid = finite && d > 0.0f && d > min_depth && (max_depth <= 0.0f || d <= max_depth);
  return valid ? d : 0.0f;
}

/// KinFu's bilateral filter at (x, y) of a dense `w` x `h` depth (0 = invalid), but skipping invalid
/// neighbours (KinFu averages their zeros in) and keeping invalid centres invalid. `space` holds the
/// (2r+1)^2 spatial weights exp(-(dx^2+dy^2)/(2 sigma_s^2)), computed once on the host; the range weight is
/// exp_neg(-diff^2 * inv_two_sigma_d2). Sums run in raster order of the window.
S3D_HOST_DEVICE S3D_FORCEINLINE float bilateral_pixel(const float* depth, int w, int h, int x, int y, int radius,
                                                      const float* space, float inv_two_sigma_d2) {
  const float d0 = depth[static_cast<std::ptrdiff_t>(y) * w + x];
  if (d0 == 0.0f) return 0.0f;
  float sum = 0.0f, weights = 0.0f;
  const int side = 2 * radius + 1;
  for (int dy = -radius; dy <= radius; ++dy) {
    const int yy = y + dy;
    if (yy < 0 || yy >= h) continue;
    for (int dx = -radius; dx <= radius; ++dx) {
      const int xx = x + dx;
      if (xx < 0 || xx >= w) continue;
      const float d = depth[static_cast<std::ptrdiff_t>(yy) * w + xx];
      if (d == 0.0f) continue;
      const float diff = d - d0;
      const float wgt = space[(dy + radius) * side + (dx + radius)] * exp_neg(-(diff * diff) * inv_two_sigma_d2);
      sum = sum + (d * wgt);
      weights = weights + wgt;
    }
  }
  return div_rn(sum, weights);  // the centre's weight is 1, so weights >= 1
}

/// KinFu pyrDown at (x, y) of the half-size level: the mean of the valid pixels of the 5x5 window around
/// (2x, 2y) (clipped at the border) within `gate` metres of the centre; invalid centre -> 0.
S3D_HOST_DEVICE S3D_FORCEINLINE float pyrdown_pixel(const float* src, int sw, int sh, int x, int y, float gate) {
  const int cx = 2 * x, cy = 2 * y;
  const float c = src[static_cast<std::ptrdiff_t>(cy) * sw + cx];
  if (c == 0.0f) return 0.0f;
  float sum = 0.0f, count = 0.0f;
  for (int yy = cy - 2; yy <= cy + 2; ++yy) {
    if (yy < 0 || yy >= sh) continue;
    for (int xx = cx - 2; xx <= cx + 2; ++xx) {
      if (xx < 0 || xx >= sw) continue;
      const float v = src[static_cast<std::ptrdiff_t>(yy) * sw + xx];
      if (v != 0.0f && fabsf(v - c) < gate) {
        sum = sum + v;
        count = count + 1.0f;
      }
    }
  }
  return div_rn(sum, count);
}

/// Back-projection of pixel (x, y) with depth d (0 -> invalid): ((x - cx) d / fx, (y - cy) d / fy, d).
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f back_project(float d, int x, int y, const Pinhole& c) {
  if (d == 0.0f) return invalid_vec3();
  return {div_rn((static_cast<float>(x) - c.cx) * d, c.fx), div_rn((static_cast<float>(y) - c.cy) * d, c.fy), d};
}

S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f normalized(Vec3f n) {
  const float len2 = squared_norm(n);
  if (!(len2 > 0.0f) || !(len2 < 3.0e38f)) return invalid_vec3();
  const float len = sqrt_rn(len2);
  return {div_rn(n.x, len), div_rn(n.y, len), div_rn(n.z, len)};
}

/// Normal at (x, y): normalised cross((down - centre), (right - centre)), i.e. facing the camera (-z for a
/// fronto-parallel surface, like a TSDF gradient). Invalid when the right or the down neighbour is outside
/// the image or any of the three vertices is invalid (KinFu's cross-product normals).
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f normal_at(const float* depth, int w, int h, int x, int y, const Pinhole& c) {
  if (x + 1 >= w || y + 1 >= h) return invalid_vec3();
  const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(y) * w + x;
  const Vec3f v00 = back_project(depth[i], x, y, c);
  const Vec3f v10 = back_project(depth[i + 1], x + 1, y, c);
  const Vec3f v01 = back_project(depth[i + w], x, y + 1, c);
  if (!is_valid(v00) || !is_valid(v10) || !is_valid(v01)) return invalid_vec3();
  return normalized(cross(v01 - v00, v10 - v00));
}

/// KinFu resizeVMap / resizeNMap at (x, y) of the half-size level: 2x2 mean, invalid if any of the four is;
/// normals re-normalised.
S3D_HOST_DEVICE S3D_FORCEINLINE void halve_maps_pixel(const Vec3f* sv, const Vec3f* sn, int sw, Vec3f* dv, Vec3f* dn,
                                                      int dw, int x, int y) {
  const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(2 * y) * sw + 2 * x;
  const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * dw + x;
  const Vec3f v0 = sv[i], v1 = sv[i + 1], v2 = sv[i + sw], v3 = sv[i + sw + 1];
  const Vec3f n0 = sn[i], n1 = sn[i + 1], n2 = sn[i + sw], n3 = sn[i + sw + 1];
  const bool ok = is_valid(v0) && is_valid(v1) && is_valid(v2) && is_valid(v3) && is_valid(n0) && is_valid(n1) &&
                  is_valid(n2) && is_valid(n3);
  if (!ok) {
    dv[o] = invalid_vec3();
    dn[o] = invalid_vec3();
    return;
  }
  dv[o] = 0.25f * (((v0 + v1) + v2) + v3);
  const Vec3f n = normalized(((n0 + n1) + n2) + n3);
  dv[o] = is_valid(n) ? dv[o] : invalid_vec3();
  dn[o] = n;
}

/// The grey level of a colour pixel in [0, 1]: ITU-R BT.601 luma in integers ((77 R + 150 G + 29 B + 128) >> 8,
/// exact), over 255.
S3D_HOST_DEVICE S3D_FORCEINLINE float grey_of_rgb(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  const int luma = (77 * int(r) + 150 * int(g) + 29 * int(b) + 128) >> 8;
  return div_rn(static_cast<float>(luma), 255.0f);
}

/// A grey pyramid level at (x, y): the level below under the 5x5 binomial filter ([1 4 6 4 1] / 16 per axis,
/// borders clamped) at (2x, 2y), as Gaussian pyramids do (Burt and Adelson 1983): without the low-pass the
/// coarse levels alias fine texture, and the photometric term's basin is no wider there than at level 0.
S3D_HOST_DEVICE S3D_FORCEINLINE float halve_grey_pixel(const float* src, int sw, int sh, int x, int y) {
  const float taps[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
  float sum = 0.0f;
  for (int dy = -2; dy <= 2; ++dy) {
    int yy = 2 * y + dy;
    yy = yy < 0 ? 0 : (yy >= sh ? sh - 1 : yy);
    float row = 0.0f;
    for (int dx = -2; dx <= 2; ++dx) {
      int xx = 2 * x + dx;
      xx = xx < 0 ? 0 : (xx >= sw ? sw - 1 : xx);
      row = row + taps[dx + 2] * src[static_cast<std::ptrdiff_t>(yy) * sw + xx];
    }
    sum = sum + taps[dy + 2] * row;
  }
  return sum;
}

/// The gradient of a grey level at (x, y): Sobel over 8 (grey levels per pixel), 0 on the border row and
/// column (photometric_row never reads them).
S3D_HOST_DEVICE S3D_FORCEINLINE void grey_gradient_pixel(const float* grey, int w, int h, int x, int y, float* gx,
                                                         float* gy) {
  const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(y) * w + x;
  if (!(x >= 1 && x + 1 < w && y >= 1 && y + 1 < h)) {
    gx[i] = 0.0f;
    gy[i] = 0.0f;
    return;
  }
  const float* up = grey + i - w;
  const float* mid = grey + i;
  const float* down = grey + i + w;
  const float dx = ((up[1] - up[-1]) + 2.0f * (mid[1] - mid[-1])) + (down[1] - down[-1]);
  const float dy = ((down[-1] - up[-1]) + 2.0f * (down[0] - up[0])) + (down[1] - up[1]);
  gx[i] = 0.125f * dx;
  gy[i] = 0.125f * dy;
}

// ---- ICP: association and the fixed reduction tree ----------------------------------------------------

/// 21 upper-triangle entries of A (row-major), 6 of g, the sum of squared residuals, the inlier count.
constexpr int kIcpTerms = 29;
/// The reduction tree (identical on both backends): pixels are cut into tiles of kTilePixels in linear
/// index order (y * width + x). Thread j (0..255) of a tile sums, in float and in this order, the pixels
/// tile * 1024 + j + k * 256 for k = 0..3 (rejected pixels add nothing). The 256 thread sums are reduced in
/// float by the warp tree of warp_tree() (offsets 16, 8, 4, 2, 1 within each group of 32) and the 8 group
/// sums by ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)). The tile sums then go to double: thread j sums
/// tiles j, j + 256, ... in order, starting from 0, and the 256 partial sums follow the same two trees in
/// double.
constexpr int kReduceThreads = 256;
constexpr int kPixelsPerThread = 4;
constexpr int kTilePixels = kReduceThreads * kPixelsPerThread;

/// Tiles of an ICP reduction over `pixels` pixels.
S3D_HOST_DEVICE S3D_FORCEINLINE int icp_tiles(int pixels) { return (pixels + kTilePixels - 1) / kTilePixels; }

/// What one ICP reduction reads, all in the backend's memory.
struct IcpInputs {
  const Vec3f* cur_v;  ///< current frame, camera frame
  const Vec3f* cur_n;
  const Vec3f* ref_v;  ///< reference, world frame
  const Vec3f* ref_n;
  int cur_pixels;  ///< width * height of the current level
  int ref_width, ref_height;
  Rigid estimate;            ///< camera to world
  Rigid world_to_reference;  ///< world to the reference camera
  Pinhole camera;            ///< intrinsics of the level
  float distance_gate2;      ///< squared metres
  float sin_angle2;          ///< squared sine
  float huber_delta;         ///< 0 = off
  int noise_weighting;       ///< 1: each row weighted by depth_noise_weight of its current depth, 0: not
  NoiseModel noise;          ///< the depth noise sigma(z)
  float model_variance;      ///< squared metres added to the depth noise's variance
  float gate_sigmas;         ///< the distance gate of a point is at least gate_sigmas * sigma(z) (0: fixed)
  // The photometric term (photometric_weight > 0): grey levels in [0, 1] of the current frame and of the
  // reference camera's own frame, with the reference's central-difference gradients, all at this level.
  const float* cur_i;        ///< [cur_pixels]
  const float* ref_i;        ///< [ref_width * ref_height]
  const float* ref_gx;       ///< d ref_i / dx, grey levels per pixel
  const float* ref_gy;       ///< d ref_i / dy
  float photometric_weight;  ///< the intensity residual's weight (the noise norm over sigma_I^2); 0 = off
};

/// The depth noise sigma(z) = a + b max(z - z0, 0)^2 metres.
S3D_HOST_DEVICE S3D_FORCEINLINE float depth_sigma(const NoiseModel& m, float z) {
  const float dz = z > m.z0 ? z - m.z0 : 0.0f;
  return m.a + (m.b * dz) * dz;
}

/// Weight of a point-to-plane residual at current depth z (metres): norm / (sigma(z)^2 + model_variance), the
/// inverse variance of the residual relative to the model's `norm` (Kinect: sigma(0.4 m)^2, so 1 at 0.4 m and
/// 0.0073 at 3 m without a model variance).
S3D_HOST_DEVICE S3D_FORCEINLINE float depth_noise_weight(const NoiseModel& m, float z, float model_variance) {
  const float sigma = depth_sigma(m, z);
  return div_rn(m.norm, sigma * sigma + model_variance);
}

/// Kinect's axial noise sigma(z) = 0.0012 + 0.0019 (z - 0.4)^2 (Nguyen, Izadi, Lovell 2012), flat below 0.4 m.
S3D_HOST_DEVICE S3D_FORCEINLINE float depth_noise_weight(float z, float model_variance) {
  return depth_noise_weight(kinect_noise(), z, model_variance);
}

/// The squared distance gate of a point at depth z: the larger of the fixed gate and gate_sigmas * sigma(z).
S3D_HOST_DEVICE S3D_FORCEINLINE float distance_gate2_at(const IcpInputs& in, float z) {
  const float g = in.gate_sigmas * depth_sigma(in.noise, z);
  const float g2 = g * g;
  return g2 > in.distance_gate2 ? g2 : in.distance_gate2;
}

/// The first half of KinectFusion's projective association (Newcombe et al., ISMAR 2011, section 3.5) for a current
/// vertex v and normal n (camera frame): s = estimate(v), moved into the reference camera and projected, rounded to the
/// nearest pixel. `ref` is the reference pixel index, -1 when rejected (invalid input, behind the camera, outside).
struct IcpProjection {
  Vec3f s, ns;  ///< world-frame point and normal of the current pixel
  int ref;
  float depth;  ///< camera-frame depth of the current pixel
};

S3D_HOST_DEVICE S3D_FORCEINLINE IcpProjection icp_project(const IcpInputs& in, Vec3f v, Vec3f n) {
  IcpProjection pr{{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}, -1, v.z};
  if (!is_valid(v) || !is_valid(n)) return pr;
  pr.s = in.estimate.apply(v);
  pr.ns = in.estimate.rotate(n);
  const Vec3f p = in.world_to_reference.apply(pr.s);
  if (!(p.z > 0.0f)) return pr;
  const float uf = div_rn(in.camera.fx * p.x, p.z) + in.camera.cx;
  const float vf = div_rn(in.camera.fy * p.y, p.z) + in.camera.cy;
  // Range test before the conversion to int (no overflow); rounding keeps [-0.5, w - 0.5) inside.
  if (!(uf > -1.0f && uf < static_cast<float>(in.ref_width) && vf > -1.0f && vf < static_cast<float>(in.ref_height)))
    return pr;
  const int u = round_rn(uf), w = round_rn(vf);
  if (u < 0 || u >= in.ref_width || w < 0 || w >= in.ref_height) return pr;
  pr.ref = w * in.ref_width + u;
  return pr;
}

/// The photometric row of a world point s: the reference camera's grey level at s's projection (bilinear) is
/// to match the current pixel's `cur` (Steinbruecker, Sturm, Cremers, "Real-time visual odometry from dense
/// RGB-D images", ICCV workshops 2011; Kerl, Sturm, Cremers, ICRA 2013). With p = W s in the reference camera,
/// the image gradient g at the projection and q = (g_x f_x / z, g_y f_y / z, -(q_x x + q_y y) / z), the grey
/// level moves by w . ds for w = W^T q, and ds = omega x s + t, so the row is [s x w, w] (the shape of the
/// point-to-plane row) and b = cur - I_ref. Valid when the projection's 2x2 neighbourhood lies where the
/// gradients are defined (1 <= u, u + 1 <= width - 2, same for v).
struct PhotometricRow {
  bool ok;
  float r[6];
  float b;
};

/// Grey levels beyond which a photometric residual gets the Huber weight delta / |b| (occlusions, glare, moving
/// objects; Open3D's RGB-D odometry uses the same 0.1).
constexpr float kPhotometricHuber = 0.1f;

S3D_HOST_DEVICE S3D_FORCEINLINE PhotometricRow photometric_row(const IcpInputs& in, Vec3f s, float cur) {
  PhotometricRow row{false, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, 0.0f};
  const Vec3f p = in.world_to_reference.apply(s);
  if (!(p.z > 0.0f)) return row;
  const float uf = div_rn(in.camera.fx * p.x, p.z) + in.camera.cx;
  const float vf = div_rn(in.camera.fy * p.y, p.z) + in.camera.cy;
  const float fw = static_cast<float>(in.ref_width), fh = static_cast<float>(in.ref_height);
  if (!(uf >= 1.0f && uf < fw - 2.0f && vf >= 1.0f && vf < fh - 2.0f)) return row;
  const int x0 = static_cast<int>(uf), y0 = static_cast<int>(vf);  // truncation: floor for positive values
  const float ax = uf - static_cast<float>(x0), ay = vf - static_cast<float>(y0);
  const float bx = 1.0f - ax, by = 1.0f - ay;
  const int i00 = y0 * in.ref_width + x0, i01 = i00 + in.ref_width;
  const float grey = (by * ((bx * in.ref_i[i00]) + (ax * in.ref_i[i00 + 1]))) +
                     (ay * ((bx * in.ref_i[i01]) + (ax * in.ref_i[i01 + 1])));
  const float gx = (by * ((bx * in.ref_gx[i00]) + (ax * in.ref_gx[i00 + 1]))) +
                   (ay * ((bx * in.ref_gx[i01]) + (ax * in.ref_gx[i01 + 1])));
  const float gy = (by * ((bx * in.ref_gy[i00]) + (ax * in.ref_gy[i00 + 1]))) +
                   (ay * ((bx * in.ref_gy[i01]) + (ax * in.ref_gy[i01 + 1])));
  const float inv_z = div_rn(1.0f, p.z);
  const float qx = (gx * in.camera.fx) * inv_z, qy = (gy * in.camera.fy) * inv_z;
  const float qz = -((qx * p.x) + (qy * p.y)) * inv_z;
  const float* m = in.world_to_reference.r;
  const Vec3f w{((m[0] * qx) + (m[3] * qy)) + (m[6] * qz), ((m[1] * qx) + (m[4] * qy)) + (m[7] * qz),
                ((m[2] * qx) + (m[5] * qy)) + (m[8] * qz)};
  const Vec3f sw = cross(s, w);
  row.ok = true;
  row.r[0] = sw.x;
  row.r[1] = sw.y;
  row.r[2] = sw.z;
  row.r[3] = w.x;
  row.r[4] = w.y;
  row.r[5] = w.z;
  row.b = cur - grey;
  return row;
}

/// Adds one weighted row of the 6x6 system to the first 27 sums: w r_i r_j (i <= j, upper triangle, row-major),
/// then w r_i b. The point-to-plane and the photometric rows both go through here, in this order of operations.
S3D_HOST_DEVICE S3D_FORCEINLINE void add_weighted_row(float w, const float* r, float b, float* acc) {
  int k = 0;
  for (int a = 0; a < 6; ++a) {
    const float wr = w * r[a];
    for (int c = a; c < 6; ++c) acc[k++] += wr * r[c];
  }
  for (int a = 0; a < 6; ++a) acc[21 + a] += (w * r[a]) * b;
}

/// The second half: with the reference vertex d and normal nr (world frame) of the projected pixel, the
/// gates (invalid reference, ||d - s||^2 > gate^2, ||R n x n_ref||^2 >= sin^2) and, for an inlier, the row
/// r = [s x n_ref, n_ref], b = n_ref . (d - s) and Huber weight w: adds w r_i r_j (i <= j), w r_i b, b^2
/// (unweighted) and 1 to `acc`. With the photometric term, every pixel that passes the distance gate (the
/// normals' gate is for the point-to-plane row only) and whose photometric_row is valid then adds w_I r_i r_j and
/// w_I r_i b of that row to the same 27 sums (the residual and the count stay geometric).
S3D_HOST_DEVICE S3D_FORCEINLINE void icp_accumulate(const IcpInputs& in, const IcpProjection& pr, Vec3f d, Vec3f nr,
                                                    float cur_grey, float* acc) {
  if (pr.ref < 0) return;
  const Vec3f diff = d - pr.s;
  // The reference sees a surface near the point: the grey levels there are of the same surface (not of one
  // that hides it, nor of the sky beyond the depth range).
  const bool near = is_valid(d) && !(squared_norm(diff) > distance_gate2_at(in, pr.depth));
  const bool inlier = near && is_valid(nr) && squared_norm(cross(pr.ns, nr)) < in.sin_angle2;
  if (inlier) {
    const Vec3f sn = cross(pr.s, nr);
    const float r[6] = {sn.x, sn.y, sn.z, nr.x, nr.y, nr.z};
    const float b = dot(nr, diff);
    float weight = 1.0f;
    if (in.huber_delta > 0.0f) {
      const float ab = fabsf(b);
      if (ab > in.huber_delta) weight = div_rn(in.huber_delta, ab);
    }
    if (in.noise_weighting) weight = weight * depth_noise_weight(in.noise, pr.depth, in.model_variance);
    add_weighted_row(weight, r, b, acc);
    acc[27] += b * b;
    acc[28] += 1.0f;
  }
  if (!near || !(in.photometric_weight > 0.0f)) return;
  const PhotometricRow ph = photometric_row(in, pr.s, cur_grey);
  if (!ph.ok) return;
  const float ab = fabsf(ph.b);
  const float pw =
      ab > kPhotometricHuber ? in.photometric_weight * div_rn(kPhotometricHuber, ab) : in.photometric_weight;
  add_weighted_row(pw, ph.r, ph.b, acc);
}

/// The current pixel's grey level (0 without the photometric term).
S3D_HOST_DEVICE S3D_FORCEINLINE float current_grey(const IcpInputs& in, int i) {
  return in.photometric_weight > 0.0f ? in.cur_i[i] : 0.0f;
}

/// Association and contribution of current pixel `i` (the two halves in a row), added to `acc`.
S3D_HOST_DEVICE S3D_FORCEINLINE void icp_pixel(const IcpInputs& in, int i, float* acc) {
  const IcpProjection pr = icp_project(in, in.cur_v[i], in.cur_n[i]);
  const Vec3f invalid = invalid_vec3();
  icp_accumulate(in, pr, pr.ref >= 0 ? in.ref_v[pr.ref] : invalid, pr.ref >= 0 ? in.ref_n[pr.ref] : invalid,
                 current_grey(in, i), acc);
}

/// Thread `j` of tile `tile`: its kPixelsPerThread pixels, added in order into `acc` (zeroed here). All
/// current pixels are read first, then all projected reference pixels, so that a GPU thread has its loads
/// in flight together (the kernel is latency-bound); the sums are those of icp_pixel in pixel order.
S3D_HOST_DEVICE S3D_FORCEINLINE void icp_thread_sum(const IcpInputs& in, int tile, int j, float* acc) {
  for (int k = 0; k < kIcpTerms; ++k) acc[k] = 0.0f;
  const int base = tile * kTilePixels + j;
  const Vec3f invalid = invalid_vec3();
  Vec3f v[kPixelsPerThread], n[kPixelsPerThread];
  for (int k = 0; k < kPixelsPerThread; ++k) {
    const int i = base + k * kReduceThreads;
    v[k] = i < in.cur_pixels ? in.cur_v[i] : invalid;
    n[k] = i < in.cur_pixels ? in.cur_n[i] : invalid;
  }
  IcpProjection pr[kPixelsPerThread];
  for (int k = 0; k < kPixelsPerThread; ++k) pr[k] = icp_project(in, v[k], n[k]);
  for (int k = 0; k < kPixelsPerThread; ++k) {
    v[k] = pr[k].ref >= 0 ? in.ref_v[pr[k].ref] : invalid;
    n[k] = pr[k].ref >= 0 ? in.ref_n[pr[k].ref] : invalid;
  }
  for (int k = 0; k < kPixelsPerThread; ++k) {
    const int i = base + k * kReduceThreads;
    icp_accumulate(in, pr[k], v[k], n[k], i < in.cur_pixels ? current_grey(in, i) : 0.0f, acc);
  }
}

/// The tree over 8 group sums, as the shuffles with offsets 4, 2, 1 leave it in lane 0.
template <typename T>
S3D_HOST_DEVICE S3D_FORCEINLINE T tree8(const T* s) {
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

/// Host emulation of the warp tree (`__shfl_down` with offsets 16, 8, 4, 2, 1, lane 0's result) over 32
/// values; `v` is overwritten.
template <typename T>
inline T warp_tree(T* v) {
  for (int o = 16; o > 0; o >>= 1)
    for (int l = 0; l < o; ++l) v[l] = v[l] + v[l + o];
  return v[0];
}

}  // namespace s3d::fusion::detail
