#include "s3d/io/colormap.hpp"

#include <algorithm>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "s3d/core/errors.hpp"

namespace s3d::io {

Colormap parse_colormap(const std::string& name) {
  if (name == "turbo") return Colormap::kTurbo;
  if (name == "jet") return Colormap::kJet;
  if (name == "grey" || name == "gray") return Colormap::kGrey;
  throw InvalidArgument("unknown colour map '" + name + "' (expected turbo, jet or grey)");
}

ImageU8 colorize(const ImageF& values, float lo, float hi, Colormap map) {
  if (!(lo < hi)) {
    lo = kInvalid;
    hi = -kInvalid;
    for (std::size_t i = 0; i < values.pixels(); ++i) {
      const float v = values.data[i * values.channels];
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (!(lo < hi)) hi = lo + 1.0f;  // constant (or empty) map
  }
  cv::Mat idx(values.height, values.width, CV_8U);
  for (int y = 0; y < values.height; ++y)
    for (int x = 0; x < values.width; ++x) {
      const float v = values.at(x, y);
      float t = std::isfinite(v) ? (v - lo) / (hi - lo) : 0.0f;
      t = std::min(1.0f, std::max(0.0f, t));
      idx.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(std::lround(t * 255.0f));
    }
  cv::Mat bgr;
  if (map == Colormap::kGrey)
    cv::cvtColor(idx, bgr, cv::COLOR_GRAY2BGR);
  else
    cv::applyColorMap(idx, bgr, map == Colormap::kTurbo ? cv::COLORMAP_TURBO : cv::COLORMAP_JET);
  ImageU8 out(values.width, values.height, 3, 0);
  for (int y = 0; y < values.height; ++y)
    for (int x = 0; x < values.width; ++x) {
      if (!std::isfinite(values.at(x, y))) continue;  // invalid stays black
      const cv::Vec3b c = bgr.at<cv::Vec3b>(y, x);
      out.at(x, y, 0) = c[2];
      out.at(x, y, 1) = c[1];
      out.at(x, y, 2) = c[0];
    }
  return out;
}

namespace {

/// The estimate with its non-finite pixels filled as the KITTI devkit does before scoring (interpolateBackground).
ImageF devkit_filled(const ImageF& estimate) {
  ImageF d = estimate;
  const int w = d.width, h = d.height;
  auto ok = [&](int u, int v) { return std::isfinite(d.at(u, v)); };
  for (int v = 0; v < h; ++v) {
    int gap = 0;
    for (int u = 0; u < w; ++u) {
      if (!ok(u, v)) {
        ++gap;
        continue;
      }
      const int u1 = u - gap, u2 = u - 1;
      if (gap > 0 && u1 > 0 && u2 < w - 1) {
        const float fill = std::min(d.at(u1 - 1, v), d.at(u2 + 1, v));
        for (int x = u1; x <= u2; ++x) d.at(x, v) = fill;
      }
      gap = 0;
    }
    for (int u = 0; u < w; ++u)
      if (ok(u, v)) {
        for (int x = 0; x < u; ++x) d.at(x, v) = d.at(u, v);
        break;
      }
    for (int u = w - 1; u >= 0; --u)
      if (ok(u, v)) {
        for (int x = u + 1; x < w; ++x) d.at(x, v) = d.at(u, v);
        break;
      }
  }
  for (int u = 0; u < w; ++u) {
    for (int v = 0; v < h; ++v)
      if (ok(u, v)) {
        for (int y = 0; y < v; ++y) d.at(u, y) = d.at(u, v);
        break;
      }
    for (int v = h - 1; v >= 0; --v)
      if (ok(u, v)) {
        for (int y = v + 1; y < h; ++y) d.at(u, y) = d.at(u, v);
        break;
      }
  }
  return d;
}

}  // namespace

ImageU8 disparity_error_image(const ImageF& estimate, const ImageF& gt, const std::vector<std::uint8_t>& nonocc) {
  if (estimate.width != gt.width || estimate.height != gt.height)
    throw InvalidArgument("disparity_error_image: the estimate and the ground truth differ in size");
  if (!nonocc.empty() && nonocc.size() != gt.pixels())
    throw InvalidArgument("disparity_error_image: the non-occluded mask differs in size");
  // The devkit's log colour scale: bin lower bound, then RGB.
  static const float kBins[10][4] = {{0.0f, 49, 54, 149},    {0.0625f, 69, 117, 180}, {0.125f, 116, 173, 209},
                                     {0.25f, 171, 217, 233}, {0.5f, 224, 243, 248},   {1.0f, 254, 224, 144},
                                     {2.0f, 253, 174, 97},   {4.0f, 244, 109, 67},    {8.0f, 215, 48, 39},
                                     {16.0f, 165, 0, 38}};
  const ImageF d = devkit_filled(estimate);
  const int w = gt.width, h = gt.height;
  ImageU8 out(w, h, 3);
  for (int v = 1; v < h - 1; ++v)
    for (int u = 1; u < w - 1; ++u) {
      const float g = gt.at(u, v);
      if (!std::isfinite(g)) continue;
      const float e = std::fabs(d.at(u, v) - g);
      const float n = std::isfinite(e) ? std::min(e / 3.0f, 20.0f * e / std::fabs(g)) : 1e30f;
      int bin = 0;
      while (bin < 9 && !(n < kBins[bin + 1][0])) ++bin;
      const bool occluded = !nonocc.empty() && nonocc[static_cast<std::size_t>(v) * w + u] == 0;
      std::uint8_t rgb[3];
      for (int c = 0; c < 3; ++c) {
        const auto value = static_cast<std::uint8_t>(kBins[bin][c + 1]);
        rgb[c] = occluded ? static_cast<std::uint8_t>(value / 2) : value;
      }
      for (int y = v - 1; y <= v + 1; ++y)
        for (int x = u - 1; x <= u + 1; ++x) std::copy_n(rgb, 3, &out.data[(static_cast<std::size_t>(y) * w + x) * 3]);
    }
  return out;
}

}  // namespace s3d::io
