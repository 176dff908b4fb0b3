#pragma once
// icp-fuse's flag values that are more than a number or a word (docs/ICP-FUSE.md).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "s3d/fusion/params.hpp"

namespace s3d::icp_fuse {

/// `N`, `NK`, `NM`, `NG` (binary units) -> bytes, in [1, 2^40] (--max-memory). @throws InvalidArgument
std::int64_t parse_bytes(const std::string& text);

/// `kinect` or `stereo:BASELINE_M[,DISPARITY_SIGMA_PX]` (--depth-noise). @throws InvalidArgument
fusion::DepthNoise parse_depth_noise(const std::string& spec);

/// `A:B`, `A:`, `:B` (half-open, 0-based) -> [first, last). @throws InvalidArgument
void parse_frame_range(const std::string& text, std::size_t* first, std::size_t* last);

/// `fx,fy,cx,cy` (commas or spaces) in pixels, or nullopt when `spec` is not four numbers (then it names a
/// file). fy may be negative (ICL-NUIM's -480). @throws InvalidArgument for four numbers that are no camera:
/// non-finite, a zero or non-positive fx, zero fy, or beyond 10^6 pixels.
std::optional<fusion::CameraIntrinsics> parse_inline_intrinsics(const std::string& spec);

}  // namespace s3d::icp_fuse
