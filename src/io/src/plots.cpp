#include "s3d/io/plots.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "picture_util.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

using picture::number;
using picture::tick_step;
using picture::to_rgb;

const cv::Scalar kBlack(0, 0, 0), kGrey(150, 150, 150), kLightGrey(225, 225, 225), kWhite(255, 255, 255);
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

/// The drawing area inside a canvas and the data range it shows.
struct Frame {
  cv::Rect area;
  double x0, x1, y0, y1;
  cv::Point at(double x, double y) const {
    return {area.x + static_cast<int>(std::lround((x - x0) / (x1 - x0) * area.width)),
            area.y + area.height - static_cast<int>(std::lround((y - y0) / (y1 - y0) * area.height))};
  }
};

void text(cv::Mat& img, const std::string& s, cv::Point at, double scale = 0.5, const cv::Scalar& c = kBlack) {
  cv::putText(img, s, at, kFont, scale, c, 1, cv::LINE_AA);
}

/// Grid, ticks, labels and the frame around f.area.
void axes(cv::Mat& img, const Frame& f, const std::string& x_label, const std::string& y_label) {
  const double sx = tick_step(f.x1 - f.x0, 8), sy = tick_step(f.y1 - f.y0, 6);
  for (double x = std::ceil(f.x0 / sx) * sx; x <= f.x1 + 1e-9 * sx; x += sx) {
    const cv::Point p = f.at(x, f.y0);
    cv::line(img, {p.x, f.area.y}, {p.x, f.area.y + f.area.height}, kLightGrey, 1);
    text(img, number(x), {p.x - 15, f.area.y + f.area.height + 18}, 0.4);
  }
  for (double y = std::ceil(f.y0 / sy) * sy; y <= f.y1 + 1e-9 * sy; y += sy) {
    const cv::Point p = f.at(f.x0, y);
    cv::line(img, {f.area.x, p.y}, {f.area.x + f.area.width, p.y}, kLightGrey, 1);
    text(img, number(y), {f.area.x - 55, p.y + 4}, 0.4);
  }
  cv::rectangle(img, f.area, kBlack, 1);
  text(img, x_label, {f.area.x + f.area.width / 2 - 40, f.area.y + f.area.height + 42});
  text(img, y_label, {5, f.area.y - 8});
}

/// The turbo colour of t in [0, 1].
cv::Scalar colour(double t) {
  static const cv::Mat lut = [] {
    cv::Mat ramp(256, 1, CV_8UC1), bgr;
    for (int i = 0; i < 256; ++i) ramp.at<std::uint8_t>(i) = static_cast<std::uint8_t>(i);
    cv::applyColorMap(ramp, bgr, cv::COLORMAP_TURBO);
    return bgr;
  }();
  const int i = std::clamp(static_cast<int>(std::lround(t * 255.0)), 0, 255);
  const cv::Vec3b c = lut.at<cv::Vec3b>(i);
  return {static_cast<double>(c[0]), static_cast<double>(c[1]), static_cast<double>(c[2])};
}

}  // namespace

ImageU8 plot_trajectory(const std::vector<Point3d>& estimate, const std::vector<double>& values,
                        const std::vector<Point3d>& reference, const std::string& title,
                        const std::string& value_label) {
  if (!values.empty() && values.size() != estimate.size())
    throw InvalidArgument("plot_trajectory: " + std::to_string(values.size()) + " values for " +
                          std::to_string(estimate.size()) + " points");
  // The two main axes of every point shown.
  cv::Mat all(static_cast<int>(estimate.size() + reference.size()), 3, CV_64F);
  int row = 0;
  for (const auto* list : {&estimate, &reference})
    for (const Point3d& p : *list) {
      for (int c = 0; c < 3; ++c) all.at<double>(row, c) = p[static_cast<std::size_t>(c)];
      ++row;
    }
  cv::Mat mean = cv::Mat::zeros(1, 3, CV_64F), axes_of = cv::Mat::eye(3, 3, CV_64F);
  if (all.rows >= 2) {
    const cv::PCA pca(all, cv::noArray(), cv::PCA::DATA_AS_ROW);
    mean = pca.mean.clone();
    axes_of = pca.eigenvectors.clone();
  }
  auto project = [&](const Point3d& p) {
    double u = 0.0, v = 0.0;
    for (int c = 0; c < 3; ++c) {
      const double d = p[static_cast<std::size_t>(c)] - mean.at<double>(0, c);
      u += d * axes_of.at<double>(0, c);
      v += d * axes_of.at<double>(1, c);
    }
    return cv::Point2d(u, v);
  };
  std::vector<cv::Point2d> est, ref;
  for (const Point3d& p : estimate) est.push_back(project(p));
  for (const Point3d& p : reference) ref.push_back(project(p));
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const auto* list : {&est, &ref})
    for (const cv::Point2d& p : *list)
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  if (!(x0 <= x1)) x0 = y0 = -1.0, x1 = y1 = 1.0;
  // Equal scale: widen the shorter side, and leave 5 % around.
  const cv::Rect area(80, 82, 760, 668);
  const double span = std::max({(x1 - x0) / area.width, (y1 - y0) / area.height, 1e-6 / area.width}) * 1.1;
  const double cx = 0.5 * (x0 + x1), cy = 0.5 * (y0 + y1);
  const Frame f{area, cx - span * area.width / 2, cx + span * area.width / 2, cy - span * area.height / 2,
                cy + span * area.height / 2};
  cv::Mat img(800, 1000, CV_8UC3, kWhite);
  axes(img, f, "main axis 1 (m)", "main axis 2 (m)");
  cv::Mat clip = img(area);
  auto local = [&](const cv::Point2d& p) { return f.at(p.x, p.y) - area.tl(); };
  for (std::size_t i = 1; i < ref.size(); ++i)
    if (i % 2) cv::line(clip, local(ref[i - 1]), local(ref[i]), kGrey, 2, cv::LINE_AA);  // dashed: every other step
  double lo = 0.0, hi = 1.0;
  if (!values.empty()) {
    lo = *std::min_element(values.begin(), values.end());
    hi = *std::max_element(values.begin(), values.end());
  }
  for (std::size_t i = 1; i < est.size(); ++i) {
    const cv::Scalar c =
        values.empty() ? cv::Scalar(180, 90, 30) : colour(hi > lo ? (values[i] - lo) / (hi - lo) : 0.5);
    cv::line(clip, local(est[i - 1]), local(est[i]), c, 2, cv::LINE_AA);
  }
  if (!est.empty()) cv::circle(clip, local(est.front()), 5, kBlack, 1, cv::LINE_AA);  // the start
  text(img, title, {80, 24}, 0.55);
  if (!ref.empty()) {
    cv::line(img, {560, 45}, {600, 45}, kGrey, 2);
    text(img, "reference (dashed)", {605, 50}, 0.45);
  }
  cv::circle(img, {85, 45}, 5, kBlack, 1, cv::LINE_AA);
  text(img, values.empty() ? "start" : "start; estimate coloured by " + value_label, {95, 50}, 0.45);
  if (!values.empty()) {  // the colour bar
    const cv::Rect bar(880, 82, 25, 668);
    for (int y = 0; y < bar.height; ++y)
      cv::line(img, {bar.x, bar.y + y}, {bar.x + bar.width, bar.y + y}, colour(1.0 - double(y) / (bar.height - 1)), 1);
    cv::rectangle(img, bar, kBlack, 1);
    for (int k = 0; k <= 4; ++k) {
      const int y = bar.y + bar.height - k * bar.height / 4;
      text(img, number(lo + (hi - lo) * k / 4.0), {bar.x + bar.width + 4, y + 4}, 0.4);
    }
    text(img, value_label, {870, 72}, 0.45);
  }
  return to_rgb(img);
}

ImageU8 plot_over_time(const std::vector<double>& seconds, const std::vector<double>& values, double rmse, double mean,
                       double median, const std::string& title, const std::string& value_label) {
  if (seconds.size() != values.size())
    throw InvalidArgument("plot_over_time: " + std::to_string(values.size()) + " values for " +
                          std::to_string(seconds.size()) + " times");
  double x0 = 0.0, x1 = 1.0, y1 = 1e-9;
  if (!seconds.empty()) {
    x0 = *std::min_element(seconds.begin(), seconds.end());
    x1 = std::max(*std::max_element(seconds.begin(), seconds.end()), x0 + 1e-6);
    y1 = std::max({*std::max_element(values.begin(), values.end()), rmse, 1e-9});
  }
  const cv::Rect area(80, 70, 880, 370);
  const Frame f{area, x0, x1, 0.0, y1 * 1.08};
  cv::Mat img(500, 1000, CV_8UC3, kWhite);
  axes(img, f, "time from the first pose (s)", value_label);
  cv::Mat clip = img(area);
  auto local = [&](double x, double y) { return f.at(x, y) - area.tl(); };
  for (std::size_t i = 1; i < values.size(); ++i)
    cv::line(clip, local(seconds[i - 1], values[i - 1]), local(seconds[i], values[i]), kGrey, 1, cv::LINE_AA);
  const struct {
    const char* name;
    double value;
    cv::Scalar colour;
  } lines[] = {{"rmse", rmse, {0, 0, 220}}, {"mean", mean, {0, 160, 0}}, {"median", median, {220, 80, 0}}};
  int legend_x = 300;
  for (const auto& l : lines) {
    cv::line(clip, local(x0, l.value), local(x1, l.value), l.colour, 2, cv::LINE_AA);
    cv::line(img, {legend_x, 45}, {legend_x + 25, 45}, l.colour, 2);
    text(img, std::string(l.name) + " " + number(l.value), {legend_x + 30, 50}, 0.45);
    legend_x += 150;
  }
  text(img, title, {80, 24}, 0.55);
  return to_rgb(img);
}

}  // namespace s3d::io
