#pragma once
// What the picture writers of s3d::io share: round tick and scale-bar lengths, short number labels, and the
// hand-over of an OpenCV BGR canvas as an RGB image.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "s3d/io/image.hpp"

namespace s3d::io::picture {

/// A step of 1, 2 or 5 times a power of ten giving about `count` steps over `span`.
inline double tick_step(double span, int count) {
  const double raw = span / count, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10.0 * p;
}

/// `v` with 4 significant digits (0 for |v| < 1e-12).
inline std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

/// A BGR canvas as an RGB image.
inline ImageU8 to_rgb(const cv::Mat& bgr) {
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  ImageU8 out(rgb.cols, rgb.rows, 3);
  for (int y = 0; y < rgb.rows; ++y)
    std::copy_n(rgb.ptr<std::uint8_t>(y), rgb.cols * 3, &out.data[static_cast<std::size_t>(y) * rgb.cols * 3]);
  return out;
}

}  // namespace s3d::io::picture
