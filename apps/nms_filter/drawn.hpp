#pragma once
// nms-filter --emit drawn: the boxes of a box file drawn on the images its records name.
#include <cstddef>
#include <string>

#include "box_job.hpp"
#include "plan.hpp"
#include "s3d/cli/tool.hpp"

namespace s3d::nms_filter {

/// Draws the kept boxes (with --draw-suppressed the others too, faint) on each image the records name:
/// one PNG per image, named after the image file, in the job's drawn folder (written whole or not at all).
/// Returns the number of pictures. @throws DataError naming the input and the image that is not found.
std::size_t write_drawn(cli::ItemContext& ctx, const KeptBoxes& kept, const Plan& plan);
/// The image file a record's image value names, in `folder`: the value itself when it is a file there (a path
/// or a file name), else the value with .png, .jpg or .jpeg, and for a number also zero-padded to 6 digits
/// (MOTChallenge `img1/000001.jpg`) and 12 (COCO 2017 `000000000785.jpg`). "" when none exists.
std::string find_image(const std::string& value, const std::string& folder);

}  // namespace s3d::nms_filter
