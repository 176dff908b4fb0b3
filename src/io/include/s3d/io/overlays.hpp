#pragma once
// Pictures that show a tool's result over its input, drawn with OpenCV into RGB images (no window): detection
// boxes on the image they were found in (nms-filter --emit drawn), and a cloud seen from above with the points a
// sampler kept marked (pc-sample --emit preview).
#include <array>
#include <string>
#include <vector>

#include "s3d/core/views.hpp"
#include "s3d/io/boxes.hpp"
#include "s3d/io/image.hpp"

namespace s3d::io {

/// One box to draw.
struct BoxDrawing {
  /// x1, y1, x2, y2 (pixels), or with `rotated` cx, cy, w, h, angle (radians, from +x towards +y).
  std::array<double, 5> box{};
  bool rotated = false;
  int colour = 0;      ///< palette index (e.g. the class): equal indices, equal colours
  std::string label;   ///< text on a tab above the box ("" = none)
  bool faint = false;  ///< drawn thin, 60 % over the image, without its label (a suppressed box)
};

/// The boxes of `table` to draw on each of its images (one list per value of the table's image field, in
/// first-seen order): the kept rows `keep` with the label "CLASS SCORE" (score `kept_scores` to 2 decimals; the
/// class when the table has a class field) and, with `suppressed`, every other row faint, before the kept ones
/// so that those are drawn over them; the colour is the class's. @throws DataError when the table names no
/// image, InvalidArgument for a row out of range.
std::vector<std::vector<BoxDrawing>> box_drawings(const DetectionTable& table, const std::vector<std::int64_t>& keep,
                                                  const std::vector<float>& kept_scores, bool suppressed);

/// The colour of palette index `index` (RGB; 20 distinct colours, repeating; a negative index counts as 0).
std::array<std::uint8_t, 3> palette_colour(int index);

/// `image` (grey or RGB) as an RGB image with `boxes` drawn in the order given: faint boxes 1 px, the others
/// 2 px with their label, white text on a tab of the box's colour. Parts outside the image are clipped.
/// @throws InvalidArgument for an image that is not 1- or 3-channel.
ImageU8 draw_boxes(const ImageU8& image, const std::vector<BoxDrawing>& boxes);

/// `cloud` seen from above (+z; x to the right, y up), `width` pixels wide and at most as high, each pixel
/// grey by how many points fall in it (darker = more), `marks` (in the same frame) drawn over them as red
/// dots; equal scale on both axes, a scale bar in the cloud's units and `title` above. Non-finite points are
/// skipped; an empty cloud gives a blank picture with the title. @throws InvalidArgument for width < 200.
ImageU8 plot_top_down(PointsView<const float> cloud, PointsView<const float> marks, const std::string& title,
                      int width = 800);

}  // namespace s3d::io
