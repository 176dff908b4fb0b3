#pragma once
// Internal: the per-voxel and per-pixel math of the TSDF volume, written once for the CPU backend (the oracle)
// and the CUDA kernels. Every float expression below is spelled out in a fixed order, the project builds
// without FMA contraction, and only +, -, *, /, sqrtf, floorf, rintf and comparisons are used (all exactly
// rounded, identical in libm and CUDA), so both backends store the same voxels, ray cast the same maps and
// extract the same meshes bit for bit.
//
// Conventions (Curless and Levoy, SIGGRAPH 1996; Newcombe et al., ISMAR 2011; PCL's gpu/kinfu `tsdf23`,
// `ray_caster.cu`, `marching_cubes.cu`, `extract.cu`):
// - Storage: one Voxel {int16 tsdf, int16 weight} per voxel, x fastest, then y, then z. The stored tsdf is
//   rintf(tsdf * 32767) (round to nearest, ties to even), clamped to [-32767, 32767]; read back as
//   stored * (1 / 32767). Weight 0 = never observed (tsdf 0).
// - Voxel (i, j, k) is centred at origin + ((i, j, k) + 0.5) * voxel, computed as
//   origin.x + (float(i) + 0.5f) * voxel.x (per axis).
// - Integration: see tsdf_sample / tsdf_fuse; each (x, y) column visits only its column_range (an exact
//   frustum cull: it skips only voxels tsdf_sample rejects).
// - Ray casting works in volume-local coordinates (world - origin), the box [0, size]; see raycast_pixel.
// - Marching cubes: see cube_case, edge_mask, edge_vertex. A cube (i, j, k) has corners (i..i+1, j..j+1,
//   k..k+1) numbered as in Bourke's tables; a corner is "inside" (bit set) when its stored tsdf < 0.
#include <cstdint>

#include "fusion_math.hpp"
#include "s3d/fusion/params.hpp"

namespace s3d::fusion::detail {

constexpr float kTsdfScale = 32767.0f;
constexpr float kInvTsdfScale = 1.0f / 32767.0f;

/// One voxel: the truncated signed distance (scaled by 32767) and its weight (frames fused, capped).
struct alignas(4) Voxel {
  std::int16_t tsdf;
  std::int16_t weight;
};

/// One voxel's colour: the running mean of the RGB samples that updated it, rounded to 8 bits per channel, and
/// how many samples (capped at kMaxColorWeight). Weight 0 = no colour seen.
struct alignas(4) ColorVoxel {
  std::uint8_t r, g, b, weight;
};
constexpr int kMaxColorWeight = 255;

/// The grid as kernels see it (trivially copyable, passed by value).
struct VolumeGrid {
  int nx, ny, nz;
  Vec3f origin;  ///< world position of the volume's corner
  Vec3f size;    ///< metres per side
  Vec3f voxel;   ///< size / resolution, per axis
  float truncation;
  float truncation_growth;  ///< VolumeParams::truncation_growth
  float truncation_cap;     ///< VolumeParams::max_truncation()
  int max_weight;

  S3D_HOST_DEVICE S3D_FORCEINLINE long long count() const {
    return static_cast<long long>(nx) * static_cast<long long>(ny) * static_cast<long long>(nz);
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE long long index(int i, int j, int k) const {
    return static_cast<long long>(i) +
           static_cast<long long>(nx) * (static_cast<long long>(j) + static_cast<long long>(ny) * k);
  }
  /// World position of voxel (i, j, k)'s centre.
  S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f centre(int i, int j, int k) const {
    return {origin.x + (static_cast<float>(i) + 0.5f) * voxel.x, origin.y + (static_cast<float>(j) + 0.5f) * voxel.y,
            origin.z + (static_cast<float>(k) + 0.5f) * voxel.z};
  }
};

/// The grid of `p` (no validation: the factories validate).
inline VolumeGrid make_grid(const VolumeParams& p) {
  VolumeGrid g{};
  g.nx = p.resolution[0];
  g.ny = p.resolution[1];
  g.nz = p.resolution[2];
  g.origin = {p.origin[0], p.origin[1], p.origin[2]};
  g.size = {p.size[0], p.size[1], p.size[2]};
  g.voxel = {p.voxel_size(0), p.voxel_size(1), p.voxel_size(2)};
  g.truncation = p.truncation;
  g.truncation_growth = p.truncation_growth;
  g.truncation_cap = p.max_truncation();
  g.max_weight = p.max_weight;
  return g;
}

/// Per-voxel scratch that covers the z slices from some slice on (a slab of surface extraction, not the whole
/// volume): the element of the voxel with linear index `index` is data[index - first].
template <typename T>
struct SliceWindow {
  T* data;
  long long first;  ///< linear index of the window's first voxel
  S3D_HOST_DEVICE S3D_FORCEINLINE T& operator[](long long index) const { return data[index - first]; }
};

/// The inverse of a rigid transform, computed in double on the host and rounded once to float, so that both
/// backends get the same world-to-camera transform.
inline Rigid inverse_rigid(const Rigid& m) {
  Rigid out{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out.r[3 * i + j] = m.r[3 * j + i];
  for (int i = 0; i < 3; ++i) {
    const double s = (static_cast<double>(m.r[i]) * m.t[0] + static_cast<double>(m.r[3 + i]) * m.t[1]) +
                     static_cast<double>(m.r[6 + i]) * m.t[2];
    out.t[i] = static_cast<float>(-s);
  }
  return out;
}

S3D_HOST_DEVICE S3D_FORCEINLINE float tsdf_value(std::int16_t stored) {
  return static_cast<float>(stored) * kInvTsdfScale;
}
/// fminf(fmaxf(rintf(tsdf * 32767), -32767), 32767), NaN to -32767 as fmaxf does, spelled as selects: the
/// per-voxel fminf / fmaxf were libm calls in the CPU loops (x86-64 has no single instruction with their NaN
/// rule).
S3D_HOST_DEVICE S3D_FORCEINLINE std::int16_t tsdf_store(float tsdf) {
  float s = rintf(tsdf * kTsdfScale);
  s = !(s >= -kTsdfScale) ? -kTsdfScale : s;
  s = s > kTsdfScale ? kTsdfScale : s;
  return static_cast<std::int16_t>(static_cast<int>(s));
}

// ----------------------------------------------------------------------------------------------- integration

/// What one integration needs, besides the depth image and the voxels.
struct IntegrateArgs {
  VolumeGrid grid;
  Rigid world_to_camera;  ///< inverse_rigid(camera_to_world)
  Vec3f camera_centre;    ///< camera_to_world's translation (world)
  float fx, fy, cx, cy;
  int width, height;
};

/// The truncation of a sample of depth d: min(truncation + truncation_growth * d, truncation_cap); the
/// truncation itself when truncation_growth is 0 (0 * d adds +0; a NaN sum, from d = +inf, takes the cap).
S3D_HOST_DEVICE S3D_FORCEINLINE float truncation_at(const VolumeGrid& g, float d) {
  const float mu = g.truncation + g.truncation_growth * d;
  return mu < g.truncation_cap ? mu : g.truncation_cap;
}

/// KinFu `tsdf23` for voxel (i, j, k): its centre p is moved to the camera (c = world_to_camera p); skipped if
/// c.z <= 0; projected to u = rintf(((fx * c.x) * (1 / c.z)) + cx) (same for v), skipped outside the image or
/// where depth d is not > 0; the depth is scaled to the ray length of that pixel,
/// D = d * sqrtf((xn * xn + yn * yn) + 1) with xn = (u - cx) / fx, yn = (v - cy) / fy, and
/// sdf = D - |p - camera centre| (world). Skipped if sdf < -mu; else tsdf = fminf(1, sdf / mu), mu =
/// truncation_at(d).
/// `pixel` receives v * width + u, the sample's index in a dense image of the depth's size (the colour image).
S3D_HOST_DEVICE S3D_FORCEINLINE bool tsdf_sample(const IntegrateArgs& a, const float* depth, long long pitch, int i,
                                                 int j, int k, float& tsdf, long long& pixel) {
  const Vec3f p = a.grid.centre(i, j, k);
  const Vec3f c = a.world_to_camera.apply(p);
  if (!(c.z > 0.0f)) return false;
  const float inv_z = 1.0f / c.z;
  const float ur = rintf(((a.fx * c.x) * inv_z) + a.cx);
  const float vr = rintf(((a.fy * c.y) * inv_z) + a.cy);
  if (!(ur >= 0.0f && ur <= static_cast<float>(a.width - 1) && vr >= 0.0f && vr <= static_cast<float>(a.height - 1)))
    return false;
  const int u = static_cast<int>(ur), v = static_cast<int>(vr);
  const float d = depth[static_cast<long long>(v) * pitch + u];
  if (!(d > 0.0f)) return false;  // 0 = invalid (NaN fails the test too)
  const float xn = (ur - a.cx) / a.fx;
  const float yn = (vr - a.cy) / a.fy;
  const float ray_depth = d * sqrtf(((xn * xn) + (yn * yn)) + 1.0f);
  const float distance = sqrtf(squared_norm(p - a.camera_centre));
  const float sdf = ray_depth - distance;
  const float mu = truncation_at(a.grid, d);
  if (!(sdf >= -mu)) return false;
  const float ratio = sdf / mu;
  tsdf = ratio < 1.0f ? ratio : 1.0f;  // fminf(1, ratio) without the libm call (NaN gives 1 either way)
  pixel = static_cast<long long>(v) * a.width + u;
  return true;
}

/// Narrows a + b * k >= 0 over k into [lo, hi] (double; b == 0 keeps or empties the range).
S3D_HOST_DEVICE S3D_FORCEINLINE void clip_half_line(double a, double b, double& lo, double& hi) {
  if (b > 0.0) {
    const double k = -a / b;
    lo = k > lo ? k : lo;
  } else if (b < 0.0) {
    const double k = -a / b;
    hi = k < hi ? k : hi;
  } else if (a < 0.0) {
    hi = -1.0;
    lo = 1.0;
  }
}

/// The z range [k0, k1] of column (i, j) that can pass tsdf_sample's camera and image tests: along a column
/// the camera coordinates are affine in k, and "in front of the camera and inside the image (widened by 2
/// pixels)" is four linear inequalities in k. Solved in double and widened by one voxel at each end, so it
/// only skips voxels that tsdf_sample would skip too (the result does not change; only the work does).
/// Returns false when the column misses the frustum.
S3D_HOST_DEVICE S3D_FORCEINLINE bool column_range(const IntegrateArgs& a, int i, int j, int& k0, int& k1) {
  const Rigid& m = a.world_to_camera;
  const double px = a.grid.origin.x + (i + 0.5) * static_cast<double>(a.grid.voxel.x);
  const double py = a.grid.origin.y + (j + 0.5) * static_cast<double>(a.grid.voxel.y);
  const double pz = a.grid.origin.z + 0.5 * static_cast<double>(a.grid.voxel.z);
  const double vz = a.grid.voxel.z;
  // c(k) = c0 + k * d
  const double c0x = (static_cast<double>(m.r[0]) * px + static_cast<double>(m.r[1]) * py) +
                     (static_cast<double>(m.r[2]) * pz + m.t[0]);
  const double c0y = (static_cast<double>(m.r[3]) * px + static_cast<double>(m.r[4]) * py) +
                     (static_cast<double>(m.r[5]) * pz + m.t[1]);
  const double c0z = (static_cast<double>(m.r[6]) * px + static_cast<double>(m.r[7]) * py) +
                     (static_cast<double>(m.r[8]) * pz + m.t[2]);
  const double dx = m.r[2] * vz, dy = m.r[5] * vz, dz = m.r[8] * vz;
  const double margin = 2.0;
  const double u_lo = -margin - a.cx, u_hi = (a.width - 1) + margin - a.cx;
  const double v_lo = -margin - a.cy, v_hi = (a.height - 1) + margin - a.cy;
  double lo = 0.0, hi = a.grid.nz - 1.0;
  clip_half_line(c0z, dz, lo, hi);                                         // z >= 0
  clip_half_line(a.fx * c0x - u_lo * c0z, a.fx * dx - u_lo * dz, lo, hi);  // fx x / z >= u_lo
  clip_half_line(u_hi * c0z - a.fx * c0x, u_hi * dz - a.fx * dx, lo, hi);  // fx x / z <= u_hi
  clip_half_line(a.fy * c0y - v_lo * c0z, a.fy * dy - v_lo * dz, lo, hi);
  clip_half_line(v_hi * c0z - a.fy * c0y, v_hi * dz - a.fy * dy, lo, hi);
  if (!(lo <= hi)) return false;
  const double l = floor(lo) - 1.0, h = ceil(hi) + 1.0;
  k0 = l < 0.0 ? 0 : static_cast<int>(l);
  k1 = h > a.grid.nz - 1.0 ? a.grid.nz - 1 : static_cast<int>(h);
  return k0 <= k1;
}

/// The running weighted mean with weight 1 per frame: ((t_prev * w_prev) + tsdf) / (w_prev + 1), weight
/// min(w_prev + 1, max_weight).
S3D_HOST_DEVICE S3D_FORCEINLINE Voxel tsdf_fuse(Voxel v, float tsdf, int max_weight) {
  const int w = v.weight;
  const float fused = ((tsdf_value(v.tsdf) * static_cast<float>(w)) + tsdf) / static_cast<float>(w + 1);
  const int nw = w + 1 < max_weight ? w + 1 : max_weight;
  return {tsdf_store(fused), static_cast<std::int16_t>(nw)};
}

/// Whether a voxel sampled at `tsdf` takes the pixel's colour: only inside the truncation band (|sdf| below the
/// truncation), where the surface is; free space in front of it (tsdf 1) keeps its colour.
S3D_HOST_DEVICE S3D_FORCEINLINE bool takes_color(float tsdf) { return tsdf < 1.0f; }

/// The rounded running mean of one channel: (mean * w + sample + (w + 1) / 2) / (w + 1) in integers.
S3D_HOST_DEVICE S3D_FORCEINLINE std::uint8_t color_mean(int mean, int w, int sample) {
  return static_cast<std::uint8_t>((mean * w + sample + (w + 1) / 2) / (w + 1));
}

/// Adds one RGB sample (3 bytes) to a voxel's colour; the weight stops at min(max_weight, kMaxColorWeight), after
/// which each new sample moves the mean by 1 / (weight + 1).
S3D_HOST_DEVICE S3D_FORCEINLINE ColorVoxel color_fuse(ColorVoxel c, const std::uint8_t* rgb, int max_weight) {
  const int w = c.weight;
  const int cap = max_weight < kMaxColorWeight ? max_weight : kMaxColorWeight;
  return {color_mean(c.r, w, rgb[0]), color_mean(c.g, w, rgb[1]), color_mean(c.b, w, rgb[2]),
          static_cast<std::uint8_t>(w + 1 < cap ? w + 1 : cap)};
}

// ----------------------------------------------------------------------------------------------- ray casting

struct RaycastArgs {
  VolumeGrid grid;
  Rigid camera_to_world;
  float fx, fy, cx, cy;
  int width, height;
};

S3D_HOST_DEVICE S3D_FORCEINLINE float read_tsdf(const Voxel* vol, const VolumeGrid& g, int i, int j, int k) {
  return tsdf_value(vol[g.index(i, j, k)].tsdf);
}

/// fmaxf / fminf as selects (a NaN operand gives the other one; the sign of a zero result may differ, which no
/// caller here depends on): they were libm calls in the CPU backend's per-ray code.
S3D_HOST_DEVICE S3D_FORCEINLINE float max_number(float a, float b) { return (a > b || b != b) ? a : b; }
S3D_HOST_DEVICE S3D_FORCEINLINE float min_number(float a, float b) { return (a < b || b != b) ? a : b; }

/// floor(coord / voxel) if it lies in [lo, hi] (then in `out`), else false (NaN too).
S3D_HOST_DEVICE S3D_FORCEINLINE bool floor_cell(float coord, float voxel, int lo, int hi, int& out) {
  const float f = floorf(coord / voxel);
  if (!(f >= static_cast<float>(lo) && f <= static_cast<float>(hi))) return false;
  out = static_cast<int>(f);
  return true;
}

/// PCL `interpolateTrilineary` at local point p: NaN unless floor(p / voxel) lies in [1, n - 2] on every axis;
/// the base voxel is the floor voxel, minus one where p lies below its centre; the eight reads are summed in
/// PCL's order (z fastest, then y, then x).
S3D_HOST_DEVICE S3D_FORCEINLINE float trilinear(const Voxel* vol, const VolumeGrid& g, Vec3f p) {
  int i, j, k;
  if (!floor_cell(p.x, g.voxel.x, 1, g.nx - 2, i) || !floor_cell(p.y, g.voxel.y, 1, g.ny - 2, j) ||
      !floor_cell(p.z, g.voxel.z, 1, g.nz - 2, k))
    return NAN;
  if (p.x < (static_cast<float>(i) + 0.5f) * g.voxel.x) --i;
  if (p.y < (static_cast<float>(j) + 0.5f) * g.voxel.y) --j;
  if (p.z < (static_cast<float>(k) + 0.5f) * g.voxel.z) --k;
  const float a = (p.x - (static_cast<float>(i) + 0.5f) * g.voxel.x) / g.voxel.x;
  const float b = (p.y - (static_cast<float>(j) + 0.5f) * g.voxel.y) / g.voxel.y;
  const float c = (p.z - (static_cast<float>(k) + 0.5f) * g.voxel.z) / g.voxel.z;
  const float a1 = 1.0f - a, b1 = 1.0f - b, c1 = 1.0f - c;
  float r = read_tsdf(vol, g, i, j, k) * a1 * b1 * c1;
  r = r + read_tsdf(vol, g, i, j, k + 1) * a1 * b1 * c;
  r = r + read_tsdf(vol, g, i, j + 1, k) * a1 * b * c1;
  r = r + read_tsdf(vol, g, i, j + 1, k + 1) * a1 * b * c;
  r = r + read_tsdf(vol, g, i + 1, j, k) * a * b1 * c1;
  r = r + read_tsdf(vol, g, i + 1, j, k + 1) * a * b1 * c;
  r = r + read_tsdf(vol, g, i + 1, j + 1, k) * a * b * c1;
  r = r + read_tsdf(vol, g, i + 1, j + 1, k + 1) * a * b * c;
  return r;
}

/// p + t * d (the one spelling of a point on the ray).
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f ray_point(Vec3f p, Vec3f d, float t) { return p + (t * d); }

/// The march's fixed step: 0.8 * truncation (PCL).
S3D_HOST_DEVICE S3D_FORCEINLINE float march_step(const VolumeGrid& g) { return g.truncation * 0.8f; }
/// The march gives up at this t (PCL's bound; the ray leaves the box long before).
S3D_HOST_DEVICE S3D_FORCEINLINE float march_limit(const VolumeGrid& g) {
  return 3.0f * ((g.size.x + g.size.y) + g.size.z);
}

/// The ray of pixel (x, y) in volume-local coordinates: it leaves the camera centre (`start`) along
/// R ((x - cx) / fx, (y - cy) / fy, 1) normalised (each component divided by sqrtf of the squared norm; a zero
/// component becomes 1e-15) and is clipped to the box [0, size] (slab test, entry clamped at t >= 0).
/// Returns false when it misses the box, else its entry parameter in `t_enter`.
S3D_HOST_DEVICE S3D_FORCEINLINE bool pixel_ray(const RaycastArgs& a, int x, int y, Vec3f& start, Vec3f& dir,
                                               float& t_enter) {
  const VolumeGrid& g = a.grid;
  start = {a.camera_to_world.t[0] - g.origin.x, a.camera_to_world.t[1] - g.origin.y,
           a.camera_to_world.t[2] - g.origin.z};
  const Vec3f ray_camera = {(static_cast<float>(x) - a.cx) / a.fx, (static_cast<float>(y) - a.cy) / a.fy, 1.0f};
  dir = a.camera_to_world.rotate(ray_camera);
  const float len = sqrtf(squared_norm(dir));
  dir = {dir.x / len, dir.y / len, dir.z / len};
  if (dir.x == 0.0f) dir.x = 1e-15f;
  if (dir.y == 0.0f) dir.y = 1e-15f;
  if (dir.z == 0.0f) dir.z = 1e-15f;

  const float tx0 = ((dir.x > 0.0f ? 0.0f : g.size.x) - start.x) / dir.x;
  const float ty0 = ((dir.y > 0.0f ? 0.0f : g.size.y) - start.y) / dir.y;
  const float tz0 = ((dir.z > 0.0f ? 0.0f : g.size.z) - start.z) / dir.z;
  const float tx1 = ((dir.x > 0.0f ? g.size.x : 0.0f) - start.x) / dir.x;
  const float ty1 = ((dir.y > 0.0f ? g.size.y : 0.0f) - start.y) / dir.y;
  const float tz1 = ((dir.z > 0.0f ? g.size.z : 0.0f) - start.z) / dir.z;
  t_enter = max_number(max_number(max_number(tx0, ty0), tz0), 0.0f);
  const float t_exit = min_number(min_number(tx1, ty1), tz1);
  return t_enter < t_exit;
}

/// The tsdf of the floor voxel at the ray's entry point, clamped into the grid (the march's first sample).
S3D_HOST_DEVICE S3D_FORCEINLINE float entry_tsdf(const Voxel* vol, const VolumeGrid& g, Vec3f start, Vec3f dir,
                                                 float t) {
  const Vec3f p0 = ray_point(start, dir, t);
  const int i0 = static_cast<int>(min_number(max_number(floorf(p0.x / g.voxel.x), 0.0f), static_cast<float>(g.nx - 1)));
  const int j0 = static_cast<int>(min_number(max_number(floorf(p0.y / g.voxel.y), 0.0f), static_cast<float>(g.ny - 1)));
  const int k0 = static_cast<int>(min_number(max_number(floorf(p0.z / g.voxel.z), 0.0f), static_cast<float>(g.nz - 1)));
  return read_tsdf(vol, g, i0, j0, k0);
}

/// The floor voxel of march sample p in (i, j, k); false when it lies outside the grid (the march ends).
S3D_HOST_DEVICE S3D_FORCEINLINE bool sample_cell(const VolumeGrid& g, Vec3f p, int& i, int& j, int& k) {
  return floor_cell(p.x, g.voxel.x, 0, g.nx - 1, i) && floor_cell(p.y, g.voxel.y, 0, g.ny - 1, j) &&
         floor_cell(p.z, g.voxel.z, 0, g.nz - 1, k);
}

/// The surface between march samples t (tsdf > 0) and t + step (q, tsdf < 0): the trilinear values F_t,
/// F_t+dt (either NaN: no hit) refine t* = t - (dt * F_t) / (F_t+dt - F_t). The vertex is origin + p(t*). The
/// normal, only where the floor voxel at t is more than 1 voxel inside every border pair (1 < i < n - 2), is
/// the central difference of trilinear tsdf at +-voxel/4 per axis, normalised (invalid if NaN or zero).
S3D_HOST_DEVICE S3D_FORCEINLINE void refine_surface(const Voxel* vol, const VolumeGrid& g, Vec3f start, Vec3f dir,
                                                    float t, float step, Vec3f q, Vec3f& vertex, Vec3f& normal) {
  const float f_next = trilinear(vol, g, q);
  if (f_next != f_next) return;
  const Vec3f pc = ray_point(start, dir, t);
  const float f_cur = trilinear(vol, g, pc);
  if (f_cur != f_cur) return;
  const float ts = t - (step * f_cur) / (f_next - f_cur);
  if (!(ts - ts == 0.0f)) return;  // inf or NaN
  const Vec3f v = ray_point(start, dir, ts);
  vertex = {v.x + g.origin.x, v.y + g.origin.y, v.z + g.origin.z};
  int gi, gj, gk;
  if (floor_cell(pc.x, g.voxel.x, 2, g.nx - 3, gi) && floor_cell(pc.y, g.voxel.y, 2, g.ny - 3, gj) &&
      floor_cell(pc.z, g.voxel.z, 2, g.nz - 3, gk)) {
    const float qx = g.voxel.x / 4.0f, qy = g.voxel.y / 4.0f, qz = g.voxel.z / 4.0f;
    const float nx = trilinear(vol, g, {v.x + qx, v.y, v.z}) - trilinear(vol, g, {v.x - qx, v.y, v.z});
    const float ny = trilinear(vol, g, {v.x, v.y + qy, v.z}) - trilinear(vol, g, {v.x, v.y - qy, v.z});
    const float nz = trilinear(vol, g, {v.x, v.y, v.z + qz}) - trilinear(vol, g, {v.x, v.y, v.z - qz});
    const float n = sqrtf(((nx * nx) + (ny * ny)) + (nz * nz));
    if (n > 0.0f && n - n == 0.0f) normal = {nx / n, ny / n, nz / n};
  }
}

/// A pixel's march before its first step: the ray, its entry t and the sample there, the step, the limit.
struct March {
  Vec3f start, dir;
  float t, tsdf, step, max_t;
};

/// Sets the outputs invalid and starts pixel (x, y)'s march in `m`; false when its ray misses the box.
S3D_HOST_DEVICE S3D_FORCEINLINE bool begin_march(const Voxel* vol, const RaycastArgs& a, int x, int y, Vec3f& vertex,
                                                 Vec3f& normal, March& m) {
  vertex = invalid_vec3();
  normal = invalid_vec3();
  if (!pixel_ray(a, x, y, m.start, m.dir, m.t)) return false;
  m.tsdf = entry_tsdf(vol, a.grid, m.start, m.dir, m.t);
  m.step = march_step(a.grid);
  m.max_t = march_limit(a.grid);
  return true;
}

/// PCL `ray_caster.cu` for pixel (x, y): the pixel_ray marches in march_step()s from its entry, reading the
/// floor voxel's tsdf (entry_tsdf first). A - to + change (strict signs) stops without a hit; on + to -
/// (previous > 0, next < 0; unobserved voxels read 0 and count as neither) refine_surface gives the vertex and
/// normal. Invalid = NaN. (The CPU backend marches the same samples faster: 8 rays at a time with AVX2,
/// raycast_lanes.hpp, else skipping empty space, raycast_skipping.hpp.)
S3D_HOST_DEVICE S3D_FORCEINLINE void raycast_pixel(const Voxel* vol, const RaycastArgs& a, int x, int y, Vec3f& vertex,
                                                   Vec3f& normal) {
  March m;
  if (!begin_march(vol, a, x, y, vertex, normal, m)) return;
  const VolumeGrid& g = a.grid;
  const Vec3f start = m.start, dir = m.dir;
  const float step = m.step, max_t = m.max_t;
  float t = m.t, tsdf = m.tsdf;
  for (; t < max_t; t += step) {
    const float previous = tsdf;
    const Vec3f q = ray_point(start, dir, t + step);
    int i, j, k;
    if (!sample_cell(g, q, i, j, k)) return;
    tsdf = read_tsdf(vol, g, i, j, k);
    if (previous < 0.0f && tsdf > 0.0f) return;  // back face
    if (previous > 0.0f && tsdf < 0.0f) {        // strict, as PCL: unobserved voxels (0) are neither side
      refine_surface(vol, g, start, dir, t, step, q, vertex, normal);
      return;
    }
  }
}

// ------------------------------------------------------------------------------ marching cubes and the cloud

/// Corner c of a cube (Bourke's numbering: 0 (0,0,0), 1 (1,0,0), 2 (1,1,0), 3 (0,1,0), 4-7 the same at z+1).
S3D_HOST_DEVICE S3D_FORCEINLINE int corner_dx(int c) { return (c ^ (c >> 1)) & 1; }
S3D_HOST_DEVICE S3D_FORCEINLINE int corner_dy(int c) { return (c >> 1) & 1; }
S3D_HOST_DEVICE S3D_FORCEINLINE int corner_dz(int c) { return (c >> 2) & 1; }

/// Edge e of a cube as (owner voxel offset, axis): the edge from voxel o to o + unit(axis). Packed as
/// dx | dy << 1 | dz << 2 | axis << 3.
S3D_HOST_DEVICE S3D_FORCEINLINE int cube_edge(int e) {
  switch (e) {
    case 0:
      return 0 | (0 << 3);  // 0-1: (0,0,0) x
    case 1:
      return 1 | (1 << 3);  // 1-2: (1,0,0) y
    case 2:
      return 2 | (0 << 3);  // 3-2: (0,1,0) x
    case 3:
      return 0 | (1 << 3);  // 0-3: (0,0,0) y
    case 4:
      return 4 | (0 << 3);  // 4-5: (0,0,1) x
    case 5:
      return (1 | 4) | (1 << 3);  // 5-6: (1,0,1) y
    case 6:
      return (2 | 4) | (0 << 3);  // 7-6: (0,1,1) x
    case 7:
      return 4 | (1 << 3);  // 4-7: (0,0,1) y
    case 8:
      return 0 | (2 << 3);  // 0-4: (0,0,0) z
    case 9:
      return 1 | (2 << 3);  // 1-5: (1,0,0) z
    case 10:
      return (1 | 2) | (2 << 3);  // 2-6: (1,1,0) z
    default:
      return 2 | (2 << 3);  // 3-7: (0,1,0) z
  }
}

/// The case of cube (i, j, k) (0 <= i < nx - 1, ...): bit c set where corner c's stored tsdf < 0; 0 when any
/// corner has weight 0 (the cube is skipped, as PCL's gpu/kinfu `marching_cubes.cu` does).
S3D_HOST_DEVICE S3D_FORCEINLINE int cube_case(const Voxel* vol, const VolumeGrid& g, int i, int j, int k) {
  int cube = 0;
  for (int c = 0; c < 8; ++c) {
    const Voxel v = vol[g.index(i + corner_dx(c), j + corner_dy(c), k + corner_dz(c))];
    if (v.weight == 0) return 0;
    if (v.tsdf < 0) cube |= 1 << c;
  }
  return cube;
}

/// The mesh vertices voxel (i, j, k) owns, as bits (1 x, 2 y, 4 z): the edge to the next voxel along that axis
/// changes sign (< 0 against >= 0) and lies in at least one cube of non-trivial case (`cases`: cube_case per
/// cube, stored at the voxel index of its corner 0, 0 for the last voxel of each axis; slices k - 1 and k are
/// read). Every such edge is used by a triangle of that cube, so no vertex is unreferenced.
S3D_HOST_DEVICE S3D_FORCEINLINE int edge_mask(const Voxel* vol, SliceWindow<const std::uint8_t> cases,
                                              const VolumeGrid& g, int i, int j, int k) {
  const Voxel v = vol[g.index(i, j, k)];
  if (v.weight == 0) return 0;
  const bool inside = v.tsdf < 0;
  int mask = 0;
  const int n[3] = {g.nx, g.ny, g.nz};
  const int p[3] = {i, j, k};
  for (int axis = 0; axis < 3; ++axis) {
    if (p[axis] + 1 >= n[axis]) continue;
    const Voxel w = vol[g.index(i + (axis == 0), j + (axis == 1), k + (axis == 2))];
    if (w.weight == 0 || (w.tsdf < 0) == inside) continue;
    // The cubes sharing the edge: offsets -1/0 along the two other axes.
    const int a1 = axis == 0 ? 1 : 0, a2 = axis == 2 ? 1 : 2;
    bool used = false;
    for (int s = 0; s < 4 && !used; ++s) {
      int q[3] = {i, j, k};
      q[a1] -= s & 1;
      q[a2] -= s >> 1;
      if (q[a1] < 0 || q[a2] < 0 || q[a1] + 1 >= n[a1] || q[a2] + 1 >= n[a2]) continue;
      used = cases[g.index(q[0], q[1], q[2])] != 0;
    }
    if (used) mask |= 1 << axis;
  }
  return mask;
}

/// The tsdf gradient at voxel (i, j, k) in stored units per metre: central differences, one-sided at the
/// borders, each divided by the axis's voxel size (the factor 1/2 is dropped: only the direction is used).
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f voxel_gradient(const Voxel* vol, const VolumeGrid& g, int i, int j, int k) {
  const int i0 = i > 0 ? i - 1 : i, i1 = i + 1 < g.nx ? i + 1 : i;
  const int j0 = j > 0 ? j - 1 : j, j1 = j + 1 < g.ny ? j + 1 : j;
  const int k0 = k > 0 ? k - 1 : k, k1 = k + 1 < g.nz ? k + 1 : k;
  const float dx = static_cast<float>(vol[g.index(i1, j, k)].tsdf) - static_cast<float>(vol[g.index(i0, j, k)].tsdf);
  const float dy = static_cast<float>(vol[g.index(i, j1, k)].tsdf) - static_cast<float>(vol[g.index(i, j0, k)].tsdf);
  const float dz = static_cast<float>(vol[g.index(i, j, k1)].tsdf) - static_cast<float>(vol[g.index(i, j, k0)].tsdf);
  return {dx / g.voxel.x, dy / g.voxel.y, dz / g.voxel.z};
}

/// The zero crossing on the edge from voxel (i, j, k) to its neighbour along `axis` (the caller has checked
/// that the signs differ): t = f0 / (f0 - f1) on the stored values, position p0 + t * (p1 - p0) between the
/// voxel centres, normal the gradients at both ends interpolated the same way and normalised (zero vector if
/// the gradient vanishes). Points outward (towards increasing tsdf, free space).
S3D_HOST_DEVICE S3D_FORCEINLINE void edge_vertex(const Voxel* vol, const VolumeGrid& g, int i, int j, int k, int axis,
                                                 Vec3f& position, Vec3f& normal) {
  const int i1 = i + (axis == 0), j1 = j + (axis == 1), k1 = k + (axis == 2);
  const float f0 = static_cast<float>(vol[g.index(i, j, k)].tsdf);
  const float f1 = static_cast<float>(vol[g.index(i1, j1, k1)].tsdf);
  const float t = f0 / (f0 - f1);
  const Vec3f p0 = g.centre(i, j, k), p1 = g.centre(i1, j1, k1);
  position = p0 + (t * (p1 - p0));
  const Vec3f n0 = voxel_gradient(vol, g, i, j, k), n1 = voxel_gradient(vol, g, i1, j1, k1);
  const Vec3f n = n0 + (t * (n1 - n0));
  const float len = sqrtf(squared_norm(n));
  normal = len > 0.0f ? Vec3f{n.x / len, n.y / len, n.z / len} : Vec3f{0.0f, 0.0f, 0.0f};
}

/// The colour of edge_vertex's point on the same edge: both ends' colours interpolated with the same t and
/// rounded (rintf); an end without colour (weight 0) gives way to the other; black when neither has one.
S3D_HOST_DEVICE S3D_FORCEINLINE void edge_color(const Voxel* vol, const ColorVoxel* colors, const VolumeGrid& g, int i,
                                                int j, int k, int axis, std::uint8_t* rgb) {
  const long long v0 = g.index(i, j, k), v1 = g.index(i + (axis == 0), j + (axis == 1), k + (axis == 2));
  const ColorVoxel c0 = colors[v0], c1 = colors[v1];
  if (c0.weight == 0 || c1.weight == 0) {
    const ColorVoxel c = c0.weight != 0 ? c0 : c1.weight != 0 ? c1 : ColorVoxel{0, 0, 0, 0};
    rgb[0] = c.r;
    rgb[1] = c.g;
    rgb[2] = c.b;
    return;
  }
  const float f0 = static_cast<float>(vol[v0].tsdf);
  const float f1 = static_cast<float>(vol[v1].tsdf);
  const float t = f0 / (f0 - f1);
  const float a[3] = {static_cast<float>(c0.r), static_cast<float>(c0.g), static_cast<float>(c0.b)};
  const float b[3] = {static_cast<float>(c1.r), static_cast<float>(c1.g), static_cast<float>(c1.b)};
  for (int ch = 0; ch < 3; ++ch)
    rgb[ch] = static_cast<std::uint8_t>(static_cast<int>(rintf(a[ch] + (t * (b[ch] - a[ch])))));
}

/// KinFu `fetchCloud`: the axes (bits 1 x, 2 y, 4 z) along which voxel (i, j, k) and its next neighbour both
/// have weight > 0, neither stores +1 (32767), and their stored tsdf have strictly opposite signs.
S3D_HOST_DEVICE S3D_FORCEINLINE int cloud_mask(const Voxel* vol, const VolumeGrid& g, int i, int j, int k) {
  const Voxel v = vol[g.index(i, j, k)];
  if (v.weight == 0 || v.tsdf == 32767 || v.tsdf == 0) return 0;
  int mask = 0;
  if (i + 1 < g.nx) {
    const Voxel w = vol[g.index(i + 1, j, k)];
    if (w.weight != 0 && w.tsdf != 32767 && ((v.tsdf > 0 && w.tsdf < 0) || (v.tsdf < 0 && w.tsdf > 0))) mask |= 1;
  }
  if (j + 1 < g.ny) {
    const Voxel w = vol[g.index(i, j + 1, k)];
    if (w.weight != 0 && w.tsdf != 32767 && ((v.tsdf > 0 && w.tsdf < 0) || (v.tsdf < 0 && w.tsdf > 0))) mask |= 2;
  }
  if (k + 1 < g.nz) {
    const Voxel w = vol[g.index(i, j, k + 1)];
    if (w.weight != 0 && w.tsdf != 32767 && ((v.tsdf > 0 && w.tsdf < 0) || (v.tsdf < 0 && w.tsdf > 0))) mask |= 4;
  }
  return mask;
}

/// Set bits below `axis` in a 3-bit mask (the vertex's rank among its voxel's).
S3D_HOST_DEVICE S3D_FORCEINLINE int mask_rank(int mask, int axis) {
  const int m = mask & ((1 << axis) - 1);
  return (m & 1) + ((m >> 1) & 1);
}
S3D_HOST_DEVICE S3D_FORCEINLINE int mask_count(int mask) { return (mask & 1) + ((mask >> 1) & 1) + ((mask >> 2) & 1); }

}  // namespace s3d::fusion::detail
