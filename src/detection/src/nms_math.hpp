#pragma once
// The per-pair math of NMS, written once and compiled by g++ (CPU backend) and nvcc (CUDA backend).
// Both sides build without FMA contraction and use only + - * / comparisons, floor and ldexp here (all
// exactly rounded in IEEE), so every IoU, every decision and every soft-NMS weight is bit-identical.
#include <cstdint>

#include "s3d/core/host_device.hpp"

namespace s3d::detection::detail {

/// Decision comparator shared by every path: IoU > thr, or >= with `suppress_at_equal`.
S3D_HOST_DEVICE S3D_FORCEINLINE bool iou_passes(float iou, float thr, bool ge) { return ge ? iou >= thr : iou > thr; }

S3D_HOST_DEVICE S3D_FORCEINLINE float max_f(float a, float b) { return a < b ? b : a; }  // std::max order
S3D_HOST_DEVICE S3D_FORCEINLINE float min_f(float a, float b) { return b < a ? b : a; }  // std::min order

// ---------------------------------------------------------------------------------------------------
// Axis-aligned boxes: torchvision's formula (nms_kernel.cpp / nms_kernel.cu), plus mmcv's `offset`.

struct AxisBox {
  float x1, y1, x2, y2;
  float area;  // (x2 - x1 + off) * (y2 - y1 + off), precomputed as torchvision does
};

S3D_HOST_DEVICE S3D_FORCEINLINE AxisBox make_axis_box(const float* b, int offset) {
  AxisBox r{b[0], b[1], b[2], b[3], 0.f};
  if (offset == 0) {
    r.area = (r.x2 - r.x1) * (r.y2 - r.y1);
  } else {
    const float off = static_cast<float>(offset);
    r.area = (r.x2 - r.x1 + off) * (r.y2 - r.y1 + off);
  }
  return r;
}

/// IoU of `a` (higher-ranked) and `b`. inter / (area_a + area_b - inter), one float division: zero-area or
/// inverted boxes give inter = 0 (0/0 = NaN, never passes a threshold).
S3D_HOST_DEVICE S3D_FORCEINLINE float axis_iou(const AxisBox& a, const AxisBox& b, int offset) {
  const float xx1 = max_f(a.x1, b.x1);
  const float yy1 = max_f(a.y1, b.y1);
  const float xx2 = min_f(a.x2, b.x2);
  const float yy2 = min_f(a.y2, b.y2);
  float w, h;
  if (offset == 0) {
    w = max_f(0.f, xx2 - xx1);
    h = max_f(0.f, yy2 - yy1);
  } else {
    const float off = static_cast<float>(offset);
    w = max_f(0.f, xx2 - xx1 + off);
    h = max_f(0.f, yy2 - yy1 + off);
  }
  const float inter = w * h;
  return inter / (a.area + b.area - inter);
}

// ---------------------------------------------------------------------------------------------------
// Deterministic elementary functions (double, Cody-Waite reduction + Taylor/Horner). The platform's
// sin/cos/exp differ between glibc and CUDA by an ulp; these do not.

S3D_HOST_DEVICE inline void det_sincos(double x, double* s, double* c) {
  const double kTwoOverPi = 0.63661977236758134308;
  const double kPio2Hi = 1.57079632673412561417e+00;  // first 33 bits of pi/2
  const double kPio2Lo = 6.07710050650619224932e-11;  // pi/2 - kPio2Hi
  const double k = floor(x * kTwoOverPi + 0.5);
  const double r = (x - k * kPio2Hi) - k * kPio2Lo;  // |r| <= ~pi/4 for moderate |x|
  const double r2 = r * r;
  // sin r = r - r^3/3! + ... + r^17/17!, cos r = 1 - r^2/2! + ... + r^18/18!
  double ps = 1.0 / 355687428096000.0;  // 1/17!
  ps = ps * r2 - 1.0 / 1307674368000.0;
  ps = ps * r2 + 1.0 / 6227020800.0;
  ps = ps * r2 - 1.0 / 39916800.0;
  ps = ps * r2 + 1.0 / 362880.0;
  ps = ps * r2 - 1.0 / 5040.0;
  ps = ps * r2 + 1.0 / 120.0;
  ps = ps * r2 - 1.0 / 6.0;
  const double sr = r + r * r2 * ps;
  double pc = -1.0 / 6402373705728000.0;  // -1/18!
  pc = pc * r2 + 1.0 / 20922789888000.0;
  pc = pc * r2 - 1.0 / 87178291200.0;
  pc = pc * r2 + 1.0 / 479001600.0;
  pc = pc * r2 - 1.0 / 3628800.0;
  pc = pc * r2 + 1.0 / 40320.0;
  pc = pc * r2 - 1.0 / 720.0;
  pc = pc * r2 + 1.0 / 24.0;
  pc = pc * r2 - 0.5;
  const double cr = 1.0 + r2 * pc;
  // quadrant = k mod 4 (k may be negative)
  const double q4 = k - 4.0 * floor(k * 0.25);
  const int q = static_cast<int>(q4);
  switch (q) {
    case 0:
      *s = sr;
      *c = cr;
      break;
    case 1:
      *s = cr;
      *c = -sr;
      break;
    case 2:
      *s = -sr;
      *c = -cr;
      break;
    default:
      *s = -cr;
      *c = sr;
      break;
  }
}

/// exp(x) for x <= 0 (the Gaussian soft-NMS weight); exp(0) = 1 exactly.
S3D_HOST_DEVICE inline double det_exp_nonpositive(double x) {
  if (!(x < 0.0)) return 1.0;  // 0 (and NaN: a NaN IoU means no overlap, weight 1)
  if (x < -745.0) return 0.0;
  const double kInvLn2 = 1.44269504088896338700;
  const double kLn2Hi = 6.93147180369123816490e-01;
  const double kLn2Lo = 1.90821492927058770002e-10;
  const double k = floor(x * kInvLn2 + 0.5);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= ~0.347
  double p = 1.0 / 6227020800.0;                   // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return ldexp(p, static_cast<int>(k));
}

// ---------------------------------------------------------------------------------------------------
// Rotated rectangles: exact intersection by convex polygon clipping (Sutherland-Hodgman), in double,
// relative to the higher-ranked box's centre (precision, as mmcv box_iou_rotated shifts to the centre).

struct RotBox {
  double cx, cy;                 // centre
  double hw, hh;                 // half width / height
  double c, s;                   // cos / sin of the angle (det_sincos)
  float xmin, ymin, xmax, ymax;  // axis-aligned bounds of the corners (pruning and the pair pre-test)
  float area;                    // w * h (float, as given)
  int valid;                     // w > 0 && h > 0
};

S3D_HOST_DEVICE inline RotBox make_rot_box(const float* b) {
  RotBox r;
  r.cx = b[0];
  r.cy = b[1];
  r.hw = 0.5 * static_cast<double>(b[2]);
  r.hh = 0.5 * static_cast<double>(b[3]);
  det_sincos(static_cast<double>(b[4]), &r.s, &r.c);
  r.area = b[2] * b[3];
  r.valid = (b[2] > 0.f && b[3] > 0.f) ? 1 : 0;
  // |extent| along x = |c| hw + |s| hh, along y = |s| hw + |c| hh
  const double ac = r.c < 0 ? -r.c : r.c;
  const double as = r.s < 0 ? -r.s : r.s;
  const double ex = ac * r.hw + as * r.hh;
  const double ey = as * r.hw + ac * r.hh;
  r.xmin = static_cast<float>(r.cx - ex);
  r.xmax = static_cast<float>(r.cx + ex);
  r.ymin = static_cast<float>(r.cy - ey);
  r.ymax = static_cast<float>(r.cy + ey);
  return r;
}

/// Corners counter-clockwise (in a y-up frame), relative to (ox, oy).
S3D_HOST_DEVICE S3D_FORCEINLINE void rot_corners(const RotBox& b, double ox, double oy, double* px, double* py) {
  const double dx = b.cx - ox;
  const double dy = b.cy - oy;
  const double ux[4] = {b.hw, -b.hw, -b.hw, b.hw};
  const double uy[4] = {b.hh, b.hh, -b.hh, -b.hh};
  for (int k = 0; k < 4; ++k) {
    px[k] = dx + (b.c * ux[k] - b.s * uy[k]);
    py[k] = dy + (b.s * ux[k] + b.c * uy[k]);
  }
}

/// Area of the intersection of two valid rotated rectangles (shoelace of the clipped polygon).
S3D_HOST_DEVICE inline double rot_intersection(const RotBox& a, const RotBox& b) {
  double ax[4], ay[4];
  rot_corners(a, a.cx, a.cy, ax, ay);
  double px[16], py[16], qx[16], qy[16];
  int n = 4;
  rot_corners(b, a.cx, a.cy, px, py);
  for (int e = 0; e < 4 && n > 0; ++e) {
    const double ex0 = ax[e], ey0 = ay[e];
    const double ex = ax[(e + 1) & 3] - ex0, ey = ay[(e + 1) & 3] - ey0;
    int m = 0;
    for (int k = 0; k < n; ++k) {
      const int kn = (k + 1 == n) ? 0 : k + 1;
      const double sx = px[k], sy = py[k], tx = px[kn], ty = py[kn];
      const double ds = ex * (sy - ey0) - ey * (sx - ex0);
      const double dt = ex * (ty - ey0) - ey * (tx - ex0);
      const bool s_in = ds >= 0.0, t_in = dt >= 0.0;
      if (s_in != t_in) {
        const double u = ds / (ds - dt);
        qx[m] = sx + (tx - sx) * u;
        qy[m] = sy + (ty - sy) * u;
        ++m;
      }
      if (t_in) {
        qx[m] = tx;
        qy[m] = ty;
        ++m;
      }
    }
    n = m;
    for (int k = 0; k < n; ++k) {
      px[k] = qx[k];
      py[k] = qy[k];
    }
  }
  if (n < 3) return 0.0;
  double twice = 0.0;
  for (int k = 0; k < n; ++k) {
    const int kn = (k + 1 == n) ? 0 : k + 1;
    twice += px[k] * py[kn] - px[kn] * py[k];
  }
  const double area = 0.5 * twice;
  return area > 0.0 ? area : 0.0;
}

/// IoU of rotated `a` (higher-ranked) and `b`, rounded to float. Boxes whose corner bounds do not overlap
/// strictly, or with w <= 0 or h <= 0, have inter = 0 (the result is then 0, or NaN when both areas are 0).
S3D_HOST_DEVICE inline float rot_iou(const RotBox& a, const RotBox& b) {
  double inter = 0.0;
  if (a.valid && b.valid && a.xmax > b.xmin && b.xmax > a.xmin && a.ymax > b.ymin && b.ymax > a.ymin)
    inter = rot_intersection(a, b);
  const double uni = static_cast<double>(a.area) + static_cast<double>(b.area) - inter;
  return static_cast<float>(inter / uni);
}

// ---------------------------------------------------------------------------------------------------
// Soft-NMS weight (mmcv soft_nms: linear 1 - IoU past the threshold, Gaussian exp(-IoU^2 / sigma)).

/// method: 1 = linear, 2 = gaussian.
S3D_HOST_DEVICE S3D_FORCEINLINE float soft_weight(float iou, int method, float thr, bool ge, float sigma) {
  if (method == 1) return iou_passes(iou, thr, ge) ? 1.f - iou : 1.f;
  const float x = -(iou * iou) / sigma;
  return static_cast<float>(det_exp_nonpositive(static_cast<double>(x)));
}

// ---------------------------------------------------------------------------------------------------
// Sort keys shared by both backends.

/// Maps a float to a uint32 whose ascending order is the float's *descending* order (-0 == +0 as in
/// comparisons). NaN scores are filtered out before any sort.
S3D_HOST_DEVICE S3D_FORCEINLINE std::uint32_t descending_score_key(float score, std::uint32_t bits) {
  if (score == 0.f) bits = 0u;  // -0 and +0 compare equal: same key keeps the index order stable
  const std::uint32_t ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return ~ordered;
}

/// Conservative margin of the tile / grid overlap pre-test for `offset` (a pair whose bounds are farther
/// apart than this cannot have a positive intersection side).
S3D_HOST_DEVICE S3D_FORCEINLINE float prune_margin(int offset, float magnitude) {
  return offset == 0 ? 0.f : 2.f * static_cast<float>(offset) + magnitude * 1e-5f;
}

}  // namespace s3d::detection::detail
