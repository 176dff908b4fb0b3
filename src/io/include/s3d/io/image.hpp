#pragma once
// Host images and the raster formats of the stereo tools: 8/16-bit PNG (and anything else OpenCV's
// imgcodecs reads), the disparity PNG encodings (KITTI d*256, OpenCV fixed point d*16), 16-bit
// depth with any scale (mm 1000, TUM 5000), and evaluation masks. PFM lives in pfm.hpp, colour maps in colormap.hpp.
//
// Conventions shared by every function here:
// - Images are dense, row-major, top row first, channels interleaved (RGB order, never OpenCV's BGR).
// - A disparity or depth map held in memory is `ImageF` whose invalid pixels are +infinity
//   (`kInvalid`); any non-finite value (NaN, -inf) is treated as invalid by every writer.
// - Every failure throws s3d::IoError (cannot open, cannot decode, cannot write) or s3d::DataError (the
//   file decodes but is not what the caller asked for, e.g. a colour image where a mask is expected);
//   what() is one line that starts with the file's path.
// No OpenCV type appears in this header: OpenCV is used inside the .cpp files only.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "s3d/core/image.hpp"

namespace s3d::io {

/// Images and the invalid-value marker are the core's (one definition for every library).
using ::s3d::Image;
using ::s3d::kInvalid;

using ImageU8 = Image<std::uint8_t>;
using ImageU16 = Image<std::uint16_t>;
using ImageF = Image<float>;

/// What `probe_image` learns from a file's header.
struct ImageInfo {
  int width = 0;
  int height = 0;
  int channels = 0;   ///< 1 grey, 3 colour (a palette image counts as 3), 4 with alpha
  int bit_depth = 0;  ///< 8 or 16 (32 for float formats)
};

/// Decodes `path` and reports its size, channel count and bit depth. @throws IoError
ImageInfo probe_image(const std::string& path);

/// Reads an image as 8-bit grey, the input of census matching.
/// - 8-bit grey: as stored. 16-bit: the high byte (v >> 8, i.e. v * 255 / 65535 truncated).
/// - colour (RGB, palette, with or without alpha; alpha is ignored): ITU-R BT.601 luma as OpenCV's
///   `cvtColor(BGR2GRAY)` computes it, Y = 0.299 R + 0.587 G + 0.114 B in 15-bit fixed point,
///   (9798 R + 19235 G + 3735 B + 2^14) >> 15.
/// @throws IoError when the file cannot be read or decoded.
ImageU8 read_grey8(const std::string& path);

/// Reads an image as 16-bit grey: 16-bit files as stored, 8-bit files as stored (0..255, not rescaled),
/// colour converted with the same BT.601 weights as `read_grey8`. `bit_depth` (if given) receives the
/// file's depth, 8 or 16. @throws IoError
ImageU16 read_grey16(const std::string& path, int* bit_depth = nullptr);

/// The bytes of a file, for decoding apart from reading (decode_grey16). @throws IoError naming `path`
std::vector<std::uint8_t> read_file_bytes(const std::string& path);
/// Grey pixels at the file's own depth: what `read_grey16` gives, without widening an 8-bit file.
struct GreyImage {
  int bit_depth = 0;  ///< 8: `eight` holds the pixels; 16: `sixteen` does
  ImageU8 eight;
  ImageU16 sixteen;
};
/// The grey pixels of an image file's bytes already in memory, with `read_grey16`'s conversion and checks;
/// common PNG layouts are decoded straight to grey (no colour image in between). `name` starts the error
/// messages. @throws IoError
GreyImage decode_grey(const std::vector<std::uint8_t>& bytes, const std::string& name);
/// 16-bit grey of either depth: 8-bit values as stored (0..255, not rescaled), as `read_grey16` gives them.
ImageU16 grey16_of(GreyImage&& grey);
/// `read_grey16` of an image file's bytes already in memory (the same pixels and checks); `name` starts
/// the error messages. @throws IoError
ImageU16 decode_grey16(const std::vector<std::uint8_t>& bytes, const std::string& name, int* bit_depth = nullptr);

/// Reads an image as 8-bit RGB (grey is replicated; 16-bit keeps the high byte). For colouring clouds.
/// @throws IoError
ImageU8 read_rgb8(const std::string& path);

/// Reads an evaluation mask (Middlebury nonocc/all/disc): true where the pixel equals `on_value`
/// (255 = evaluated / near a discontinuity in those files). Colour/palette masks are read as grey.
/// @throws IoError, DataError when the file is 16-bit.
std::vector<std::uint8_t> read_mask(const std::string& path, int* width, int* height, int on_value = 255);

/// Writes an 8-bit PNG (1 channel grey, 3 RGB, 4 RGBA) to exactly `path` (not atomic: callers such as
/// the CLI frame hand a temporary path). The format follows the extension (`.png` recommended).
/// @throws IoError, InvalidArgument for a channel count other than 1, 3, 4.
void write_image(const std::string& path, const ImageU8& image);
/// Writes a 16-bit single-channel PNG. @throws IoError
void write_image(const std::string& path, const ImageU16& image);

/// Integer PNG encodings of disparity maps (16-bit single channel). Depth maps take a scale instead
/// (encode_depth_png16).
enum class PngEncoding {
  kKitti,  ///< disparity * 256 rounded, 0 = invalid (KITTI devkit); range (0, 255.996]
  kX16,    ///< disparity * 16 rounded, 0 = invalid (OpenCV StereoSGBM fixed point); range (0, 4095.94]
};

/// Parses `kitti` or `x16`. @throws InvalidArgument
PngEncoding parse_png_encoding(const std::string& text);
/// The name `parse_png_encoding` accepts.
const char* to_string(PngEncoding encoding);

/// Encodes a disparity map (pixels) to 16 bits. Invalid (non-finite), non-positive, and values beyond the
/// encoding's range become 0 (so a 0 always reads back as invalid; a disparity of exactly 0 cannot be
/// stored in these formats: use PFM for that).
ImageU16 encode_png16(const ImageF& values, PngEncoding encoding);
/// The inverse of `encode_png16`: 0 -> kInvalid, else v / 256 or v / 16.
ImageF decode_png16(const ImageU16& values, PngEncoding encoding);

/// Encodes values in [0, 1] (a confidence, say) to 8 bits: clamped to [0, 1], times 255, rounded to the nearest.
ImageU8 encode_unit_png8(const ImageF& values);

/// Units per metre of common 16-bit depth PNGs.
inline constexpr double kDepthScaleMm = 1000.0;   ///< millimetres (Kinect-style datasets, sgm-depth's default)
inline constexpr double kDepthScaleTum = 5000.0;  ///< TUM RGB-D and ICL-NUIM: 5000 per metre

/// Parses a depth scale: `mm` (1000), `tum` (5000), or a positive finite number. @throws InvalidArgument
double parse_depth_scale(const std::string& text);
/// Encodes a depth map (metres) as 16-bit PNG values round(depth * scale); invalid, non-positive, and
/// depths that round to 0 or beyond 65535 become 0 (= invalid). @throws InvalidArgument unless scale > 0.
ImageU16 encode_depth_png16(const ImageF& depth_m, double scale);
/// The inverse: 0 -> kInvalid, else v / scale metres; with `saturated_is_invalid` also 65535 -> kInvalid
/// (Microsoft 7-Scenes marks invalid depth that way). @throws InvalidArgument unless scale > 0.
ImageF decode_depth_png16(const ImageU16& values, double scale, bool saturated_is_invalid = false);

/// Reads a ground-truth or previously written disparity map, choosing the decoding by the file:
/// - `.pfm`: float as stored (non-finite values mean invalid, as in Middlebury's files).
/// - 16-bit PNG: KITTI, d = v / 256 (0 = invalid) unless `scale` > 0 is given (d = v / scale).
/// - 8-bit PNG (Middlebury): d = v / scale, 0 = invalid. `scale` <= 0 means: the first number of an
///   `info.txt` beside the file (the Middlebury 2001/2003 layout), else DataError asking for a scale.
/// @throws IoError, DataError
ImageF read_disparity(const std::string& path, double scale = 0.0);

}  // namespace s3d::io
