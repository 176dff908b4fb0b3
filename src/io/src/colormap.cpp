#include "s3d/io/colormap.hpp"

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

}  // namespace s3d::io
