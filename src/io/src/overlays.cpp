#include "s3d/io/overlays.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "picture_util.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

cv::Scalar bgr(int index) {
  const auto c = palette_colour(index);
  return {static_cast<double>(c[2]), static_cast<double>(c[1]), static_cast<double>(c[0])};
}

/// The four corners of a box, in drawing order.
std::vector<cv::Point> corners(const BoxDrawing& b) {
  std::vector<cv::Point2d> p;
  if (b.rotated) {
    const double c = std::cos(b.box[4]), s = std::sin(b.box[4]), hw = 0.5 * b.box[2], hh = 0.5 * b.box[3];
    const double corner_offsets[4][2] = {{-hw, -hh}, {hw, -hh}, {hw, hh}, {-hw, hh}};
    for (const auto& o : corner_offsets) p.emplace_back(b.box[0] + o[0] * c - o[1] * s, b.box[1] + o[0] * s + o[1] * c);
  } else {
    p = {{b.box[0], b.box[1]}, {b.box[2], b.box[1]}, {b.box[2], b.box[3]}, {b.box[0], b.box[3]}};
  }
  // Coordinates far outside the image are clamped so that the integer conversion cannot overflow.
  std::vector<cv::Point> out;
  for (const auto& q : p)
    out.emplace_back(static_cast<int>(std::lround(std::clamp(q.x, -1e6, 1e6))),
                     static_cast<int>(std::lround(std::clamp(q.y, -1e6, 1e6))));
  return out;
}

}  // namespace

std::array<std::uint8_t, 3> palette_colour(int index) {
  // Matplotlib's tab20 (its strong and light halves interleaved: neighbours differ).
  static constexpr std::uint8_t kTab20[20][3] = {{31, 119, 180},  {255, 127, 14},  {44, 160, 44},   {214, 39, 40},
                                                 {148, 103, 189}, {140, 86, 75},   {227, 119, 194}, {127, 127, 127},
                                                 {188, 189, 34},  {23, 190, 207},  {174, 199, 232}, {255, 187, 120},
                                                 {152, 223, 138}, {255, 152, 150}, {197, 176, 213}, {196, 156, 148},
                                                 {247, 182, 210}, {199, 199, 199}, {219, 219, 141}, {158, 218, 229}};
  const auto& c = kTab20[std::max(index, 0) % 20];
  return {c[0], c[1], c[2]};
}

ImageU8 draw_boxes(const ImageU8& image, const std::vector<BoxDrawing>& boxes) {
  if (image.channels != 1 && image.channels != 3)
    throw InvalidArgument("draw_boxes: a grey or RGB image, not " + std::to_string(image.channels) + " channels");
  cv::Mat canvas;
  {
    const cv::Mat in(image.height, image.width, image.channels == 1 ? CV_8UC1 : CV_8UC3,
                     const_cast<std::uint8_t*>(image.data.data()));
    cv::cvtColor(in, canvas, image.channels == 1 ? cv::COLOR_GRAY2BGR : cv::COLOR_RGB2BGR);
  }
  // Faint boxes first, blended as one layer, so that none hides a kept box.
  cv::Mat faint = canvas.clone();
  bool any_faint = false;
  for (const BoxDrawing& b : boxes)
    if (b.faint) {
      cv::polylines(faint, std::vector<std::vector<cv::Point>>{corners(b)}, true, bgr(b.colour), 1, cv::LINE_AA);
      any_faint = true;
    }
  if (any_faint) cv::addWeighted(canvas, 0.4, faint, 0.6, 0.0, canvas);
  for (const BoxDrawing& b : boxes) {
    if (b.faint) continue;
    const std::vector<cv::Point> c = corners(b);
    cv::polylines(canvas, std::vector<std::vector<cv::Point>>{c}, true, bgr(b.colour), 2, cv::LINE_AA);
    if (b.label.empty()) continue;
    int baseline = 0;
    const cv::Size size = cv::getTextSize(b.label, kFont, 0.45, 1, &baseline);
    // The tab sits on the box's top-left corner, inside the picture.
    const cv::Point top_left = *std::min_element(
        c.begin(), c.end(), [](const cv::Point& a, const cv::Point& q) { return a.y + a.x < q.y + q.x; });
    const int x = std::clamp(top_left.x, 0, std::max(0, canvas.cols - size.width - 4));
    const int y = std::clamp(top_left.y - size.height - 6, 0, std::max(0, canvas.rows - size.height - 6));
    cv::rectangle(canvas, cv::Rect(x, y, size.width + 4, size.height + 6), bgr(b.colour), cv::FILLED);
    cv::putText(canvas, b.label, {x + 2, y + size.height + 2}, kFont, 0.45, cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
  }
  return picture::to_rgb(canvas);
}

ImageU8 plot_top_down(PointsView<const float> cloud, PointsView<const float> marks, const std::string& title,
                      int width) {
  if (width < 200) throw InvalidArgument("plot_top_down: width " + std::to_string(width) + " < 200");
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const PointsView<const float>* view : {&cloud, &marks})
    for (std::size_t i = 0; i < view->size; ++i) {
      const float* p = view->point(i);
      if (!std::isfinite(p[0]) || !std::isfinite(p[1]) || !std::isfinite(p[2])) continue;
      x0 = std::min(x0, double(p[0])), x1 = std::max(x1, double(p[0]));
      y0 = std::min(y0, double(p[1])), y1 = std::max(y1, double(p[1]));
    }
  const int margin = 20, top = 40, bottom = 44, area_w = width - 2 * margin;
  const bool empty = !(x0 <= x1);
  if (empty) x0 = y0 = -1.0, x1 = y1 = 1.0;
  // One scale for both axes: the wider extent fills the width, the height follows (at most the width).
  const double span_x = std::max(x1 - x0, 1e-9), span_y = std::max(y1 - y0, 1e-9);
  const double scale = std::min(area_w / span_x, area_w / span_y);  // pixels per unit
  const int area_h = std::max(1, static_cast<int>(std::ceil(span_y * scale)));
  cv::Mat img(top + area_h + bottom, width, CV_8UC3, cv::Scalar(255, 255, 255));
  const int offset_x = margin + static_cast<int>((area_w - span_x * scale) / 2);
  auto pixel = [&](const float* p, int& px, int& py) {
    if (!std::isfinite(p[0]) || !std::isfinite(p[1]) || !std::isfinite(p[2])) return false;
    px = std::min(area_w - 1, static_cast<int>((p[0] - x0) * scale)) + offset_x;
    py = top + area_h - 1 - std::min(area_h - 1, static_cast<int>((p[1] - y0) * scale));
    return true;
  };
  // Point density per pixel, shaded on a log scale: one point light grey, 64 and more near black.
  std::vector<std::uint32_t> count(static_cast<std::size_t>(img.rows) * img.cols, 0);
  for (std::size_t i = 0; i < cloud.size; ++i) {
    int px = 0, py = 0;
    if (pixel(cloud.point(i), px, py)) ++count[static_cast<std::size_t>(py) * img.cols + px];
  }
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) {
      const std::uint32_t n = count[static_cast<std::size_t>(y) * img.cols + x];
      if (n == 0) continue;
      const int grey = std::max(40, 190 - static_cast<int>(25.0 * std::log2(double(n))));
      img.at<cv::Vec3b>(y, x) = cv::Vec3b(grey, grey, grey);
    }
  const int radius = marks.size > 20000 ? 1 : 2;
  for (std::size_t i = 0; i < marks.size; ++i) {
    int px = 0, py = 0;
    if (pixel(marks.point(i), px, py)) cv::circle(img, {px, py}, radius, cv::Scalar(40, 40, 220), cv::FILLED);
  }
  // Scale bar: a round length near a fifth of the width.
  const double bar = picture::tick_step(area_w / scale, 5);
  const int bar_px = std::max(1, static_cast<int>(std::lround(bar * scale)));
  const int bar_y = top + area_h + 24;
  cv::line(img, {margin, bar_y}, {margin + bar_px, bar_y}, cv::Scalar(0, 0, 0), 2);
  cv::putText(img, picture::number(bar), {margin + bar_px + 8, bar_y + 5}, kFont, 0.45, cv::Scalar(0, 0, 0), 1,
              cv::LINE_AA);
  cv::putText(img, title, {margin, 26}, kFont, 0.55, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  return picture::to_rgb(img);
}

}  // namespace s3d::io
