#pragma once
// Pictures of trajectories and per-pose errors, drawn with OpenCV into RGB images (no window), for looking at:
// what evo's `--plot` shows, as PNG files a batch run can leave behind.
#include <array>
#include <string>
#include <vector>

#include "s3d/io/image.hpp"

namespace s3d::io {

using Point3d = std::array<double, 3>;

/// The estimate drawn in the plane of the two main axes (the largest principal components of all the points
/// shown), coloured by `values` (one per estimate point, the colour bar labelled `value_label`; empty: one
/// colour, no bar), the reference (may be empty) dashed grey beneath. Equal scale on both axes, ticks in
/// metres. @throws InvalidArgument when values is neither empty nor one per estimate point.
ImageU8 plot_trajectory(const std::vector<Point3d>& estimate, const std::vector<double>& values,
                        const std::vector<Point3d>& reference, const std::string& title,
                        const std::string& value_label);

/// `values` against `seconds` (one each), with horizontal lines at rmse (red), mean (green) and median (blue)
/// and a legend giving them. @throws InvalidArgument for lists of different lengths.
ImageU8 plot_over_time(const std::vector<double>& seconds, const std::vector<double>& values, double rmse, double mean,
                       double median, const std::string& title, const std::string& value_label);

}  // namespace s3d::io
