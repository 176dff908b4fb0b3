#pragma once
// LZF (Marc Lehmann's liblzf format), as PCD's binary_compressed uses it. Each control byte c is either
// a literal run (c < 32: the next c + 1 bytes are copied) or a back reference (length c >> 5, 7 meaning
// "add the next byte", plus 2; offset ((c & 31) << 8 | next byte) + 1 back from the output end).
#include <cstddef>
#include <cstdint>
#include <string>

namespace s3d::io::detail {

/// Decodes `size` bytes at `in` into exactly `out_size` bytes at `out`. False when the stream is corrupt
/// (a reference before the start, a run past either end) or does not fill `out_size` exactly.
bool lzf_decompress(const std::uint8_t* in, std::size_t size, std::uint8_t* out, std::size_t out_size);

/// Encodes `size` bytes at `in` (greedy, one hash probe per position).
std::string lzf_compress(const std::uint8_t* in, std::size_t size);

}  // namespace s3d::io::detail
