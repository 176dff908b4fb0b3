#pragma once
// Internal: PNG decoding through libpng with our own error and warning handlers. OpenCV's PNG codec leaves
// libpng's defaults in place, which print `libpng error: ...` / `libpng warning: ...` on stderr before
// our own one-line error (and whatever -q says). Here libpng's errors become the exception's message and
// its warnings (a damaged ancillary chunk of an image that still decodes) are dropped.
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace s3d::io::detail {

/// True when `bytes` start with the PNG signature.
bool is_png(const std::vector<std::uint8_t>& bytes);

/// Decodes a PNG exactly as cv::imdecode(IMREAD_UNCHANGED) does (the same libpng transforms: 8/16 bits
/// kept, 16-bit in native byte order, palette to BGR, grey below 8 bits to 8, alpha or tRNS as a 4th
/// channel, BGR order), without printing anything.
/// @throws IoError `NAME: cannot decode image: <libpng's reason>`, or when the image has more than 2^30
///         pixels (OpenCV's cap).
cv::Mat decode_png(const std::vector<std::uint8_t>& bytes, const std::string& name);

}  // namespace s3d::io::detail
