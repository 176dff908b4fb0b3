#pragma once
// Versions of the libraries s3d::io links, for --version (header macros only; nothing is linked here).
#include <string>

namespace s3d::cli::detail {
std::string opencv_version();  ///< e.g. `4.6.0`, or `unknown`
std::string pcl_version();     ///< e.g. `1.13.0`, or `unknown`
}  // namespace s3d::cli::detail
