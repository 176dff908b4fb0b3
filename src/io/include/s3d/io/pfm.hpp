#pragma once
// Portable Float Map (PFM), the Middlebury / SceneFlow format for float disparity and depth maps.
//
// Layout: a text header `Pf` (1 channel) or `PF` (3 channels), then `W H`, then a scale whose sign gives
// the byte order (negative = little endian, positive = big endian; its magnitude is not used here), each
// followed by one whitespace character, then W*H*channels IEEE-754 floats with rows stored BOTTOM TO TOP.
// In memory (s3d::io::Image) rows are top to bottom: the readers/writers flip. Invalid = +inf (Middlebury).
#include <string>

#include "s3d/io/image.hpp"

namespace s3d::io {

/// Reads a `Pf` or `PF` file; both byte orders. A 3-channel file keeps its 3 channels.
/// @throws IoError (cannot open, bad header, truncated data), all naming `path`.
ImageF read_pfm(const std::string& path);

/// Writes `image` (1 or 3 channels) as PFM to exactly `path`. `little_endian` chooses the byte order
/// (scale -1 or 1). Values are written as given (+inf for invalid stays +inf).
/// @throws IoError, InvalidArgument for other channel counts.
void write_pfm(const std::string& path, const ImageF& image, bool little_endian = true);

}  // namespace s3d::io
