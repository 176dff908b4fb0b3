#pragma once
// Internal: grey pixels straight from a PNG's bytes, for the layouts stereo datasets use (KITTI, Middlebury:
// non-interlaced 8-bit grey, grey + alpha, RGB, RGBA, and 16-bit grey). The IDAT stream is inflated in one
// call by libdeflate, then each row is unfiltered (PNG specification, section 9) and converted to grey in the
// same pass: no BGR image, no 16-bit copy. The pixels are libpng's; the grey is cvtColor(BGR2GRAY)'s.
#include <cstddef>
#include <cstdint>

#include "s3d/io/image.hpp"

namespace s3d::io::detail {

/// Decodes `size` bytes that start with the PNG signature. Returns bit_depth 0 (nothing decoded) for any other layout
/// (palette, interlaced, 1-4 bits, 16-bit colour) and for any irregularity (a CRC, the zlib stream, chunk order, sizes
/// libpng would refuse): the caller then decodes with libpng, which decides and reports as before. The caller
/// has already refused headers whose pixel count the file cannot hold (deflate's ratio).
GreyImage decode_png_grey_fast(const std::uint8_t* data, std::size_t size);

}  // namespace s3d::io::detail
